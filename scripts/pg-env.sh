# Shared helpers for scripts that run throwaway PostgreSQL clusters (sourced, not executed).
# initdb/postgres refuse to run as root: as root, commands run as the postgres system user.

PG_BINDIR=$(pg_config --bindir)
export PATH="$PG_BINDIR:$PATH"

# Runs a command as the cluster owner (postgres when we are root, else ourselves).
as_cluster_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		su postgres -s /bin/bash -c "export PATH='$PATH'; $*"
	else
		bash -c "$*"
	fi
}

# Makes a fresh directory the cluster owner can write to.
owned_tmpdir() {
	local d
	d=$(mktemp -d "/tmp/dxpriv-$1.XXXXXX")
	chmod 755 "$d"
	[ "$(id -u)" -ne 0 ] || chown postgres:postgres "$d"
	echo "$d"
}

# First TCP port at or above $1 that nothing listens on (parallel test runs must not collide).
free_port() {
	local p=$1
	while ss -ltn 2>/dev/null | awk '{print $4}' | grep -q ":$p\$"; do
		p=$((p + 1))
	done
	echo "$p"
}

# Starts a cluster in $1 on port $2 with dxpriv preloaded; stops it on exit of the caller.
start_cluster() {
	local dir=$1 port=$2
	as_cluster_owner "initdb -D '$dir/data' -A trust -U postgres --no-sync >'$dir/initdb.log' 2>&1"
	cat >>"$dir/data/postgresql.conf" <<CONF
shared_preload_libraries = 'dxpriv'
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
CONF
	as_cluster_owner "pg_ctl -D '$dir/data' -l '$dir/server.log' -w start >/dev/null"
	export PGHOST=$dir PGPORT=$port PGUSER=postgres
}

stop_cluster() {
	as_cluster_owner "pg_ctl -D '$1/data' -m fast -w stop >/dev/null" || true
}
