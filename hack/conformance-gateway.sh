#!/usr/bin/env bash
# Runs the MCP conformance suite (test/conformance/run.sh) against
# `garra gateway`'s POST /mcp with a bearer token, the way an external
# orchestrator reaches it, once per protocol revision.
#
#   hack/conformance-gateway.sh /abs/path/to/garra --spec-version V [--spec-version V2]... [run.sh options...]
#
# It builds nothing: $1 is the garra binary to test (`make conformance-gateway`
# builds it first). Each --spec-version is one run, against the same gateway,
# with test/conformance/expected-failures-http-V.txt. Other arguments go to
# run.sh unchanged, e.g. `--scenario tools-list --logs /tmp/conf`.
#
# What it does: writes a throwaway config (bridge enabled, loopback listen on
# a port the kernel picks, data_dir in a temp dir), starts the gateway with a
# clean environment whose only credential is a random GARRAIA_GATEWAY_API_KEY,
# waits for GET /healthz, runs for each revision V
#   test/conformance/run.sh --url http://127.0.0.1:PORT/mcp \
#       --header "Authorization: Bearer $KEY" --spec-version V \
#       --expected test/conformance/expected-failures-http-V.txt
# and always stops the gateway and removes the temp dir (trap), including
# on Ctrl-C. Exit status is the worst of run.sh's (0 green, 1 drift, 2 setup
# error).
# shellcheck disable=SC2317 # stop_gateway and cleanup run from traps
set -euo pipefail

die() {
	echo "conformance-gateway: $*" >&2
	exit 2
}

(($# >= 1)) || die "usage: $0 /abs/path/to/garra --spec-version V... [run.sh options...]"
garra=$1
shift
revisions=() args=()
while (($#)); do
	if [[ $1 == --spec-version ]]; then
		(($# >= 2)) || die "--spec-version needs a value"
		revisions+=("$2")
		shift 2
	else
		args+=("$1")
		shift
	fi
done
((${#revisions[@]})) || die "give at least one --spec-version (a protocol revision such as 2025-11-25)"
[[ $garra == /* ]] || die "give the garra binary as an absolute path (got $garra)"
[[ -x $garra && -f $garra ]] || die "not an executable file: $garra"
command -v curl >/dev/null || die "curl not found (needed to wait for /healthz)"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runner=$root/test/conformance/run.sh
[[ -x $runner ]] || die "not found or not executable: $runner"
for v in "${revisions[@]}"; do
	[[ -f $root/test/conformance/expected-failures-http-$v.txt ]] || die "not found: $root/test/conformance/expected-failures-http-$v.txt"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/garra-conformance-gateway.XXXXXX")
gw_pid="" runner_pid=""
stop_gateway() {
	[[ -n $gw_pid ]] || return 0
	kill -TERM "$gw_pid" 2>/dev/null || true
	local i
	for ((i = 0; i < 100; i++)); do # the gateway drains for up to 15 s; 10 s is plenty here
		kill -0 "$gw_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$gw_pid" 2>/dev/null || true
	wait "$gw_pid" 2>/dev/null || true
	gw_pid=""
}
cleanup() {
	if [[ -n $runner_pid ]]; then
		# run.sh stops its own suite and bridge on TERM.
		kill -TERM "$runner_pid" 2>/dev/null || true
		wait "$runner_pid" 2>/dev/null || true
	fi
	stop_gateway
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 32 random bytes as hex: the owner's key for this run only. It reaches the
# gateway through its environment, never the config file.
key=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
((${#key} == 64)) || die "could not read /dev/urandom"

mkdir -p "$work/data" "$work/home"
cat >"$work/config.yml" <<EOF
data_dir: $work/data
gateway:
  listen: 127.0.0.1:0
  # The suite sends a few hundred requests from one IP within minutes.
  rate_limit: {requests_per_minute: 100000}
  mcp_http:
    enabled: true
EOF

log=$work/gateway.log
# A clean environment: nothing of the caller's (GARRAIA_CONFIG, provider
# keys, a real HOME) leaks into the run.
env -i PATH="$PATH" HOME="$work/home" GARRAIA_GATEWAY_API_KEY="$key" \
	"$garra" gateway --config "$work/config.yml" >"$log" 2>&1 &
gw_pid=$!

addr=""
for ((i = 0; i < 300; i++)); do # up to 30 s: CI machines are slow to exec a fresh binary
	addr=$(sed -n 's/.*msg="garra gateway listening" addr=\([^ ]*\).*/\1/p' "$log" | head -n1)
	[[ -n $addr ]] && break
	kill -0 "$gw_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -z $addr ]]; then
	echo "conformance-gateway: the gateway did not report its address; its log:" >&2
	sed 's/^/  /' "$log" >&2
	exit 2
fi
base=http://$addr
healthy=0
for ((i = 0; i < 100; i++)); do
	if curl -fsS --max-time 2 -o /dev/null "$base/healthz" 2>/dev/null; then
		healthy=1
		break
	fi
	kill -0 "$gw_pid" 2>/dev/null || break
	sleep 0.1
done
if ((!healthy)); then
	echo "conformance-gateway: $base/healthz never answered 200; gateway log:" >&2
	sed 's/^/  /' "$log" >&2
	exit 2
fi
if ! grep -q 'ponte MCP Streamable HTTP montada' "$log"; then
	echo "conformance-gateway: the gateway did not mount /mcp; gateway log:" >&2
	sed 's/^/  /' "$log" >&2
	exit 2
fi
echo "conformance-gateway: garra gateway (pid $gw_pid) on $base, bearer from a random GARRAIA_GATEWAY_API_KEY"

rc=0
for v in "${revisions[@]}"; do
	# In the background so that a signal to this script is handled at once
	# (bash defers traps until a foreground command ends).
	"$runner" --url "$base/mcp" --header "Authorization: Bearer $key" --spec-version "$v" \
		--expected "$root/test/conformance/expected-failures-http-$v.txt" "${args[@]+"${args[@]}"}" &
	runner_pid=$!
	r=0
	wait "$runner_pid" || r=$?
	runner_pid=""
	((r > rc)) && rc=$r
done

# The key must never reach the gateway's own log.
if grep -qF -- "$key" "$log"; then
	echo "conformance-gateway: the gateway log contains the API key" >&2
	rc=1
fi
if ((rc != 0)); then
	echo "conformance-gateway: gateway log (last 40 lines):" >&2
	tail -n 40 "$log" | sed 's/^/  /' >&2
fi
exit "$rc"
