#!/usr/bin/env bash
# Installs the Debian 12 packages dxpriv needs to build and test (idempotent; root or sudo).
set -euo pipefail
packages=(build-essential cmake pkg-config postgresql-15 postgresql-server-dev-15 libeigen3-dev
	libboost-math-dev libgtest-dev iproute2 libbenchmark-dev python3 python3-psycopg2 python3-psycopg python3-numpy libpostgresql-jdbc-java default-jdk-headless)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
