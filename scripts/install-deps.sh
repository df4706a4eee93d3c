#!/usr/bin/env bash
# Installs the Debian 12 packages dxpriv needs to build and test (idempotent; root or sudo).
#   install-deps.sh          everything `make test` needs (the end-to-end tests' clients included)
#   install-deps.sh --build  only what building the extension and `make demo` need
set -euo pipefail
# build: compiler, CMake, the server and its headers, Eigen and Boost.Math; ccache (used by the
# Makefile when present) makes rebuilds of unchanged files cheap
packages=(build-essential cmake pkg-config postgresql-15 postgresql-server-dev-15 libeigen3-dev
	libboost-math-dev ccache)
build_only=0
[ "${1:-}" = "--build" ] && build_only=1
if [ $build_only -eq 0 ]; then
	packages+=(libgtest-dev iproute2 libbenchmark-dev python3 python3-psycopg2 python3-psycopg python3-numpy
		libpostgresql-jdbc-java default-jdk-headless python3-sqlalchemy r-base-core r-cran-dbi r-cran-dbplyr
		r-cran-rpostgresql)
	# Node.js and npm for the knex client of test/e2e/test_bi_clients.py: Debian's, unless a node with npm is there
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ $build_only -eq 1 ] && exit 0
# knex and pg (node-postgres) from the npm registry into build/node, at the versions locked in
# test/e2e/bi_clients/package-lock.json
root=$(cd "$(dirname "$0")/.." && pwd)
node_src="$root/test/e2e/bi_clients" node_dir="$root/build/node"
if ! cmp -s "$node_src/package-lock.json" "$node_dir/package-lock.json" || [ ! -d "$node_dir/node_modules/knex" ]; then
	mkdir -p "$node_dir"
	cp "$node_src/package.json" "$node_src/package-lock.json" "$node_dir/"
	(cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
