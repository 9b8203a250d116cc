#!/usr/bin/env bash
# A throwaway PostgreSQL for trying the shared store by hand: initdb in a
# temp dir, the server on a Unix socket there and on 127.0.0.1:<port>,
# trust authentication (nothing listens beyond this machine), removed on
# exit. Prints the DSN; runs until Ctrl-C.
#
#   hack/postgres.sh [port]      # default port 55432
#   GARRA_DSN='<printed DSN>' garra gateway --config gw.yml   # store: {driver: postgres, dsn_env: GARRA_DSN}
#
# The Go tests do not need it: test/pgtest starts its own server the same
# way (GARRA_TEST_POSTGRES_DSN points them at this one instead).
set -euo pipefail

port="${1:-55432}"
bindir="$(pg_config --bindir 2>/dev/null || true)"
if [ ! -x "$bindir/initdb" ]; then
	bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
fi
if [ ! -x "$bindir/initdb" ]; then
	echo "postgres.sh: initdb not found (install Debian's postgresql package)" >&2
	exit 1
fi

dir="$(mktemp -d /tmp/garra-pg-XXXXXX)"
# PostgreSQL refuses to run as root: run it as nobody then.
as=()
if [ "$(id -u)" = 0 ]; then
	chown nobody: "$dir"
	as=(runuser -u nobody --)
fi
cleanup() {
	"${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

"${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }
"${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
	-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir" start >/dev/null ||
	{ cat "$dir/log" >&2; exit 1; }

echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') in $dir"
echo "DSN (TCP):    postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
echo "DSN (socket): host=$dir port=$port user=postgres dbname=postgres sslmode=disable"
echo "Ctrl-C stops it and removes $dir."
while sleep 3600; do :; done
