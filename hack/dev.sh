#!/usr/bin/env bash
# hack/dev.sh — `make dev`: the operator against a local control plane.
#
# Starts kube-apiserver and etcd from the envtest binaries (hack/envtest.sh,
# through hack/devcp, which also installs config/crd/bases and writes an admin
# kubeconfig), builds and runs cmd/manager against it in the background,
# creates the Secret config/samples/garra_v1alpha1_garraserver.yaml names,
# applies the sample, waits, and prints the GarraServer, its status and the
# objects it owns. There are no nodes and no controllers but the operator:
# Deployments never become available, so Ready stays False — the point is to
# see what the operator writes.
#
# Everything is torn down on exit (also on Ctrl-C) unless DEV_KEEP=1, in
# which case the control plane and the manager keep running and the script
# prints how to reach and stop them.
#
# Environment:
#   DEV_KEEP=1      leave everything running
#   DEV_WAIT=5      seconds to wait after applying the sample
#   DEV_DIR         work dir (kubeconfig, logs, binaries); default a temp dir
set -euo pipefail

cd "$(dirname "$0")/.."
GO="${GO:-go}"
DEV_WAIT="${DEV_WAIT:-5}"
DEV_DIR="${DEV_DIR:-$(mktemp -d -t garra-dev.XXXXXX)}"
mkdir -p "$DEV_DIR"
export KUBECONFIG="$DEV_DIR/kubeconfig"

assets="$(hack/envtest.sh | tail -n1)"
export KUBEBUILDER_ASSETS="$assets"
kubectl() { "$assets/kubectl" "$@"; }

cp_pid="" mgr_pid=""
teardown() {
	local rc=$?
	if [ "${DEV_KEEP:-0}" = 1 ]; then
		cat <<-MSG

			DEV_KEEP=1: left running.
			  export KUBECONFIG=$KUBECONFIG
			  $assets/kubectl get garraservers
			  manager log: $DEV_DIR/manager.log
			  stop: kill $mgr_pid $cp_pid
		MSG
		exit "$rc"
	fi
	echo "==> tearing down"
	if [ -n "$mgr_pid" ]; then
		kill "$mgr_pid" 2>/dev/null || true
		wait "$mgr_pid" 2>/dev/null || true
	fi
	if [ -n "$cp_pid" ]; then
		kill "$cp_pid" 2>/dev/null || true # devcp stops kube-apiserver and etcd
		wait "$cp_pid" 2>/dev/null || true
	fi
	case "$DEV_DIR" in /tmp/garra-dev.*) rm -rf "$DEV_DIR" ;; esac
	exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

echo "==> building hack/devcp and cmd/manager"
"$GO" build -o "$DEV_DIR/devcp" ./hack/devcp
"$GO" build -o "$DEV_DIR/manager" ./cmd/manager

echo "==> starting kube-apiserver and etcd ($assets)"
"$DEV_DIR/devcp" --out-kubeconfig "$KUBECONFIG" --crd-dir config/crd/bases >"$DEV_DIR/devcp.log" 2>&1 &
cp_pid=$!
for _ in $(seq 1 120); do
	grep -q '^ready' "$DEV_DIR/devcp.log" 2>/dev/null && break
	if ! kill -0 "$cp_pid" 2>/dev/null; then
		cat "$DEV_DIR/devcp.log" >&2
		echo "control plane did not start" >&2
		exit 1
	fi
	sleep 0.5
done
grep -q '^ready' "$DEV_DIR/devcp.log" || { cat "$DEV_DIR/devcp.log" >&2; echo "control plane not ready after 60s" >&2; exit 1; }
echo "    $(grep '^ready' "$DEV_DIR/devcp.log")"
kubectl wait --for=condition=Established crd/garraservers.garra.garraia.io --timeout=30s >/dev/null

echo "==> starting the manager (log: $DEV_DIR/manager.log)"
"$DEV_DIR/manager" --kubeconfig "$KUBECONFIG" \
	--metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:0 \
	--garra-image garra:dev --sandbox-image garra-sandbox:dev >"$DEV_DIR/manager.log" 2>&1 &
mgr_pid=$!

echo "==> creating the sample's Secret and applying config/samples/garra_v1alpha1_garraserver.yaml"
kubectl create secret generic llm-keys --from-literal=openrouter=sk-or-dev
kubectl apply -f config/samples/garra_v1alpha1_garraserver.yaml

echo "==> waiting ${DEV_WAIT}s"
sleep "$DEV_WAIT"
kill -0 "$mgr_pid" 2>/dev/null || { cat "$DEV_DIR/manager.log" >&2; echo "the manager exited" >&2; exit 1; }

echo
echo "\$ kubectl get garraservers -o wide"
kubectl get garraservers -o wide
echo
echo "\$ kubectl get garraserver team-a -o yaml  # status"
kubectl get garraserver team-a -o yaml | sed -n '/^status:/,$p'
echo
echo "\$ kubectl get deploy,svc,cm,secret,pvc,sa,networkpolicy -l app.kubernetes.io/instance=team-a"
kubectl get deploy,svc,cm,secret,pvc,sa,networkpolicy -l app.kubernetes.io/instance=team-a
