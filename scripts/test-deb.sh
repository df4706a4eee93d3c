#!/usr/bin/env bash
# make test-deb: installs build/deb/postgresql-15-dxpriv_<version>_amd64.deb with `apt install
# ./...deb` (root or sudo), runs the demo (scripts/demo.sh: a clean cluster, policies, budgets,
# analyst queries and refusals) against the packaged files, then removes the package and puts back
# the dxpriv files that were installed before (e.g. by `make install` into the same directories).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
deb=$root/build/deb/postgresql-15-dxpriv_${version}_amd64.deb
[ -f "$deb" ] || { echo "test-deb: $deb is missing: run 'make deb' first" >&2; exit 1; }
bindir=/usr/lib/postgresql/15/bin                       # Debian's server, where the package installs
libdir=$($bindir/pg_config --pkglibdir) extdir=$($bindir/pg_config --sharedir)/extension
docdir=$($bindir/pg_config --docdir)/extension/dxpriv   # doc/*.md (PGXS DOCS)
started=$(date +%s)

# what `make install` may have put there: saved, and restored when the package is removed
saved=$(mktemp -d /tmp/dxpriv-deb-saved.XXXXXX)
cp -a "$libdir"/dxpriv.so "$extdir"/dxpriv.control "$extdir"/dxpriv--*.sql "$saved/" 2>/dev/null || true
restore() {
	local status=$?
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq postgresql-15-dxpriv >/dev/null 2>&1 || true
	for f in "$saved"/*; do
		[ -e "$f" ] || continue
		case $f in *.so) $SUDO cp -a "$f" "$libdir/" ;; *) $SUDO cp -a "$f" "$extdir/" ;; esac
	done
	rm -rf "$saved"
	[ $status -eq 0 ] || echo "test-deb FAILED (exit $status)" >&2
	exit $status
}
trap restore EXIT

$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >/dev/null
dpkg-query -W -f='${Package} ${Version} ${Status}\n' postgresql-15-dxpriv
files=$(dpkg -L postgresql-15-dxpriv)
for f in "$libdir/dxpriv.so" "$extdir/dxpriv.control" "$extdir/dxpriv--$version.sql" "$extdir/dxpriv--0.1.0--$version.sql" \
	"$docdir/reference.md" "$docdir/dba-guide.md"; do
	grep -qx "$f" <<<"$files" || { echo "test-deb: the package does not install $f" >&2; exit 1; }
done
# the demo against the packaged files (Debian's pg_config first on PATH)
PATH="$bindir:$PATH" DXPRIV_DEMO_PORT=${DXPRIV_DEMO_PORT:-55742} "$root/scripts/demo.sh" >"$root/build/deb/demo.log" 2>&1 \
	|| { tail -n 40 "$root/build/deb/demo.log" >&2; exit 1; }
grep -q 'analyst budget left' "$root/build/deb/demo.log" || { echo "test-deb: the demo printed no answers" >&2; exit 1; }
echo "test-deb: ok: package installed with apt, demo ran on it ($(grep -c '^' "$root/build/deb/demo.log") lines in build/deb/demo.log), $(($(date +%s) - started)) s"
