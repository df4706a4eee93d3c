#!/bin/bash
# Times README's first command on a fresh Debian 12: a minbase bookworm root made by debootstrap, in
# a chroot on this machine (the "fresh machine" figures of README and doc/operator-guide.md).
#
# Usage (as root, with debootstrap and the Debian mirror reachable):
#   scripts/time-fresh-machine.sh [REPOSITORY]      # default: this checkout's repository
# Steps timed: `apt-get install git make` (what README asks for first), `git clone`, `make demo`
# (its own package installs, the build and the walk-through). The debootstrap itself (the "machine")
# is not counted. Everything happens under a temporary directory in /opt, removed at the end.
set -euo pipefail

repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
mirror=${DXPRIV_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "time-fresh-machine: run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "time-fresh-machine: apt-get install debootstrap first" >&2; exit 1; }

root=$(mktemp -d /opt/dxpriv-fresh.XXXXXX)
chmod 755 "$root" # the chroot's / (mktemp makes it 0700: the postgres user could not run anything)
log=${DXPRIV_FRESH_LOG:-/tmp/dxpriv-fresh-machine.log}
cleanup() {
	for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
	rm -rf "$root"
}
trap cleanup EXIT

echo "debootstrap --variant=minbase bookworm $root $mirror (not timed)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$log" 2>&1
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# a default Debian 12 installation also has bookworm-updates and bookworm-security;
# DXPRIV_FRESH_SECURITY=0 keeps debootstrap's bookworm/main only (older PostgreSQL 15 minor release)
if [ "${DXPRIV_FRESH_SECURITY:-1}" = 1 ]; then
	cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SOURCES
fi
git clone -q --bare "$repo" "$root/srv/dxpriv.git" # the "remote" the user clones from

in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb bash -c "$1"; }
step() { # name, command: runs it in the chroot and prints its wall time
	local t0 t1
	t0=$(date +%s.%N)
	in_root "$2" >>"$log" 2>&1 || { echo "time-fresh-machine: '$1' failed (log: $log)" >&2; exit 1; }
	t1=$(date +%s.%N)
	printf '%-28s %6.1f s\n' "$1" "$(echo "$t1 - $t0" | bc)"
	echo "$t1 - $t0" | bc >>"$root/.times"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
step "apt-get install git make" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git make"
step "git clone" "git clone -q /srv/dxpriv.git /root/dxpriv"
step "make demo" "cd /root/dxpriv && make demo"
printf '%-28s %6.1f s\n' "total" "$(paste -sd+ "$root/.times" | bc)"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
