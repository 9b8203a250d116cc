#!/usr/bin/env bash
# hack/e2e.sh — run the end-to-end suite (test/e2e) or its cluster benchmarks
# on a real Kubernetes cluster.
#
# Usage:
#   hack/e2e.sh [test]     # the Ginkgo suite (make e2e)
#   hack/e2e.sh bench      # apply → Ready for 1 and 10 orchestrators, idle pod memory, sandbox wake,
#                          # live onboarding and token rotation p50/p95 over 10+ runs (make bench-e2e)
#   hack/e2e.sh --can-run  # exit 0 when this machine can run it without building
#                          # Kubernetes, else print why and exit 1 (.ci/run asks)
#
# Which cluster:
#   * KUBECONFIG set: that cluster. Images are built (hack/images.sh) and handed
#     to E2E_LOADER, a command with {} for each tarball, e.g.
#       E2E_LOADER='kind load image-archive {}'
#     Without a loader the images must already be on the node. A cluster whose
#     node is not this host needs E2E_STORAGE_CLASS (e.g. Kind's "standard");
#     without it the suite makes hostPath volumes under E2E_HOSTPATH_DIR on
#     this host. E2E_ACCESS=port-forward reaches the gateway and the LLM
#     double through the API server when the host cannot reach ClusterIPs.
#   * KUBECONFIG unset: the local single-node cluster of the e2e-cluster tool
#     (E2E_CLUSTER_TOOL, default ../shared/e2e-cluster beside the clone). Its
#     binaries are built when missing (cached: ~25 min cold, then seconds),
#     the cluster is brought up, and it is always torn down on exit, even on
#     failure or interrupt. Needs root.
#
# Timings are appended to E2E_TIMINGS (default bin/e2e-timings.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

mode="${1:-test}"
# The tool sits beside the checkout; anywhere else, E2E_CLUSTER_TOOL names it.
TOOL="${E2E_CLUSTER_TOOL:-$repo/../shared/e2e-cluster}"
KC="${KC:-/tmp/kcluster}"
KBIN="${KBIN:-/tmp/k8s-bin}"
export KC KBIN
CTRD_SOCK=/run/kcluster/containerd/containerd.sock
K8S_BINARIES="etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl crictl"
HOST_TOOLS="containerd ctr runc iptables"

log() { printf '[e2e %s] %s\n' "$(date +%T)" "$*" >&2; }

# why_not prints, one per line, what keeps the local cluster from starting
# without a build; nothing means it can.
why_not() {
	[ "$(id -u)" = 0 ] || echo "not root (the local cluster changes host networking)"
	[ -x "$TOOL/local-cluster.sh" ] || echo "no e2e-cluster tool at $TOOL (set E2E_CLUSTER_TOOL)"
	local b
	for b in $K8S_BINARIES; do
		[ -x "$KBIN/$b" ] || echo "Kubernetes binary $KBIN/$b not built (make e2e builds it, ~25 min cold)"
	done
	for b in $HOST_TOOLS; do
		command -v "$b" >/dev/null || echo "$b not installed (make e2e installs it from Debian's packages)"
	done
	[ -f "$KC/images/pause.tar" ] || echo "the cluster's base images are not built ($KC/images/pause.tar)"
	hack/sandbox-rootfs.sh --check >/dev/null 2>&1 || echo "the sandbox base layer is not cached (hack/sandbox-rootfs.sh, ~3 min)"
	hack/postgres-rootfs.sh --check >/dev/null 2>&1 || echo "the PostgreSQL base layer is not cached (hack/postgres-rootfs.sh, ~3 min)"
	hack/toolchain-rootfs.sh --check >/dev/null 2>&1 || echo "the toolchain image's base layer is not cached (hack/toolchain-rootfs.sh, ~2 min)"
}

case "$mode" in
--can-run)
	if [ -n "${KUBECONFIG:-}" ]; then
		echo "KUBECONFIG=$KUBECONFIG"
		exit 0
	fi
	reasons="$(why_not)"
	if [ -n "$reasons" ]; then
		echo "$reasons"
		exit 1
	fi
	exit 0
	;;
test | bench) ;;
*)
	echo "usage: $0 [test|bench|--can-run]" >&2
	exit 2
	;;
esac

export E2E_TIMINGS="${E2E_TIMINGS:-$repo/bin/e2e-timings.txt}"
export E2E_IMAGES_DIR="${E2E_IMAGES_DIR:-$repo/bin/images}"
export IMAGES_DIR="$E2E_IMAGES_DIR"
export IMAGE_TAG="${E2E_IMAGE_TAG:-e2e}"
mkdir -p "$(dirname "$E2E_TIMINGS")"
{
	echo "== $(date -u +%FT%TZ) make e2e ($mode) at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
} >>"$E2E_TIMINGS"
timing() { printf '  %-60s %8s s\n' "$1" "$2" | tee -a "$E2E_TIMINGS" >&2; }

local_cluster=0
if [ -z "${KUBECONFIG:-}" ]; then
	local_cluster=1
	[ "$(id -u)" = 0 ] || {
		log "KUBECONFIG is not set and the local cluster needs root"
		exit 1
	}
	[ -x "$TOOL/local-cluster.sh" ] || {
		log "KUBECONFIG is not set and there is no e2e-cluster tool at $TOOL"
		exit 1
	}
	# The base layers are built by hack/images.sh below (minutes, not a
	# Kubernetes build), so only the rest needs the cluster tool's build.
	if [ -n "$(why_not | grep -v 'base layer')" ]; then
		log "building the local cluster's binaries and images (cached after the first time)"
		t0=$SECONDS
		"$TOOL/local-cluster-build.sh"
		timing "local cluster built" $((SECONDS - t0))
	fi
fi

t0=$SECONDS
log "building Garra's images into $E2E_IMAGES_DIR"
hack/images.sh >&2
timing "images built (hack/images.sh)" $((SECONDS - t0))

if [ "$local_cluster" = 1 ]; then
	down() {
		local rc=$?
		if [ -n "${E2E_KEEP:-}" ]; then
			log "E2E_KEEP set: the local cluster stays up (KUBECONFIG=$KC/admin.kubeconfig; $TOOL/local-cluster.sh down ends it)"
			exit "$rc"
		fi
		# The tool's fence drops forwarded pod traffic bound off the pod
		# bridge: its counters say whether anything in the cluster tried.
		if fence="$(iptables -t mangle -L KCLUSTER-FENCE -n -v -x 2>/dev/null | awk '$3=="DROP"{p+=$1} END{print p+0}')"; then
			echo "  pod packets the fence dropped (bound off the machine): $fence" | tee -a "$E2E_TIMINGS" >&2
		fi
		log "tearing the local cluster down"
		"$TOOL/local-cluster.sh" down >"$KC/e2e-down.log" 2>&1 || log "down failed: see $KC/e2e-down.log"
		exit "$rc"
	}
	trap down EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	t0=$SECONDS
	log "bringing the local cluster up (log: $KC/e2e-up.log)"
	if [ -f "$KC/pids" ] && pid="$(awk '$1=="kube-apiserver"{print $2}' "$KC/pids" | tail -n1)" &&
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		log "a local cluster is already up: run against it with KUBECONFIG=$KC/admin.kubeconfig, or end it with $TOOL/local-cluster.sh down"
		trap - EXIT
		exit 1
	fi
	# NetworkPolicy is enforced by kube-router's policy controller when it
	# is built; without it the node runs with NETPOL=0 (policies accepted,
	# not enforced), and says so.
	if [ "${NETPOL:-1}" != 0 ] && [ ! -x "$KBIN/kube-router" ]; then
		log "kube-router is not built ($KBIN/kube-router): NetworkPolicy is not enforced on this run (NETPOL=0)"
		export NETPOL=0
	fi
	# A fresh etcd every run: nothing an earlier run left behind.
	rm -rf "$KC/var"
	mkdir -p "$KC"
	if ! "$TOOL/local-cluster.sh" up >"$KC/e2e-up.log" 2>&1; then
		tail -n 30 "$KC/e2e-up.log" >&2
		exit 1
	fi
	timing "local cluster up (CoreDNS Ready)" $((SECONDS - t0))
	export KUBECONFIG="$KC/admin.kubeconfig"
	export E2E_LOADER="${E2E_LOADER:-ctr --address $CTRD_SOCK -n k8s.io images import {}}"
fi

# The suite compiles with -tags e2e only; -v streams Ginkgo's progress.
t0=$SECONDS
rc=0
case "$mode" in
test)
	# E2E_FOCUS runs only the specs whose text matches (a Ginkgo focus).
	(cd test/e2e && go test -tags e2e -count=1 -timeout 45m -v . -ginkgo.v -ginkgo.no-color ${E2E_FOCUS:+"-ginkgo.focus=$E2E_FOCUS"}) || rc=$?
	timing "suite (go test -tags e2e ./test/e2e)" $((SECONDS - t0))
	;;
bench)
	# E2E_BENCH runs only the benchmarks whose name matches (default all).
	# The live onboarding and rotation benchmarks time at least 10 runs
	# whatever E2E_BENCHTIME says, for their p95.
	(cd test/e2e && go test -tags e2e -count=1 -timeout 60m -run '^$' -bench "${E2E_BENCH:-.}" -benchtime "${E2E_BENCHTIME:-3x}" .) || rc=$?
	timing "cluster benchmarks" $((SECONDS - t0))
	;;
esac
exit "$rc"
