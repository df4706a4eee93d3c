#!/usr/bin/env bash
# make deb: builds build/deb/postgresql-15-dxpriv_<version>_amd64.deb with Debian's tooling
# (dpkg-buildpackage, debhelper, pg_buildext from postgresql-server-dev-all) from a copy of the
# tracked and new files of this tree (build/ and other ignored files left out).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
need=()
for p in debhelper postgresql-server-dev-all dpkg-dev fakeroot; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	echo "installing: ${need[*]}"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
out=$root/build/deb
src=$out/dxpriv-$version
rm -rf "$src" && mkdir -p "$src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents -a {} "$src/" 2>/dev/null || true)
# the upgrade test's 0.1.0 build and other build products are not sources
rm -rf "$src/build"
started=$(date +%s)
(cd "$src" && dpkg-buildpackage -us -uc -b --no-sign >"$out/build.log" 2>&1) || { tail -n 40 "$out/build.log" >&2; exit 1; }
deb=$out/postgresql-15-dxpriv_${version}_amd64.deb
[ -f "$deb" ] || { echo "build-deb: $deb was not produced" >&2; exit 1; }
echo "built $deb in $(($(date +%s) - started)) s:"
dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -v '/$'
