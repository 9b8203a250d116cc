#!/usr/bin/env bash
# hack/images.sh — build Garra's images without a container engine:
# static linux binaries (garra, manager, the LLM double), the Debian bases
# of the sandbox and of the test PostgreSQL (hack/sandbox-rootfs.sh and
# hack/postgres-rootfs.sh, cached), then hack/imagebuild writes
#   $IMAGES_DIR/garra.tar            localhost/garra:$IMAGE_TAG
#   $IMAGES_DIR/garra-sandbox.tar    localhost/garra-sandbox:$IMAGE_TAG
#   $IMAGES_DIR/garra-llmdouble.tar  localhost/garra-llmdouble:$IMAGE_TAG
#   $IMAGES_DIR/garra-postgres.tar   localhost/garra-postgres:$IMAGE_TAG
#   $IMAGES_DIR/garra-e2e-toolchain.tar  localhost/garra-e2e-toolchain:$IMAGE_TAG (make, python3, no garra)
# and prints "ref<TAB>path" per image.
#
# Load them into a cluster with its own loader, e.g.
#   ctr --address /run/kcluster/containerd/containerd.sock -n k8s.io images import FILE
#   kind load image-archive FILE
#
# Environment: IMAGES_DIR (default bin/images), IMAGE_TAG (default e2e).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGES_DIR="${IMAGES_DIR:-bin/images}"
IMAGE_TAG="${IMAGE_TAG:-e2e}"
BIN="bin/linux"
VERSION="$(hack/version.sh)"
COMMIT="$(git rev-parse HEAD 2>/dev/null || echo "")"

mkdir -p "$BIN" "$IMAGES_DIR"
export CGO_ENABLED=0 GOOS=linux
go build -trimpath -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" -o "$BIN/garra" ./cmd/garra
go build -trimpath -ldflags "-s -w" -o "$BIN/manager" ./cmd/manager
go build -trimpath -ldflags "-s -w" -o "$BIN/llmdouble" ./test/fakes/llmdouble/cmd/llmdouble
unset GOOS

base="$(hack/sandbox-rootfs.sh | tail -n1)"
pgbase="$(hack/postgres-rootfs.sh | tail -n1)"
tcbase="$(hack/toolchain-rootfs.sh | tail -n1)"
# imagebuild is a module of its own (go-containerregistry stays out of the
# product's dependencies), so it runs from its directory with absolute paths.
top="$(pwd)"
case "$IMAGES_DIR" in /*) out="$IMAGES_DIR" ;; *) out="$top/$IMAGES_DIR" ;; esac
(cd hack/imagebuild && go run . -out "$out" -tag "$IMAGE_TAG" \
	-garra "$top/$BIN/garra" -manager "$top/$BIN/manager" -llmdouble "$top/$BIN/llmdouble" -sandbox-base "$base" -postgres-base "$pgbase" -toolchain-base "$tcbase")
