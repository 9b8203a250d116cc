#!/usr/bin/env bash
# hack/npm.sh — the npm packages that start the stdio MCP server (make npm):
#   @garraia/garra-mcp             the bin shim garra-mcp (npm/garra-mcp)
#   @garraia/garra-mcp-<os>-<cpu>  a static garra each, one per platform the
#                                  shim's optionalDependencies name
# packed with `npm pack` into $NPM_DIR, every one with the same version. npm
# installs only the platform package whose os and cpu match the machine, so
# `npx -y @garraia/garra-mcp` fetches nothing but registry tarballs.
#
# Environment:
#   NPM_DIR        where the tarballs go (default bin/npm; old ones removed)
#   NPM_VERSION    the packages' version (default: hack/version.sh --bare)
#   NPM_PLATFORMS  os-cpu list to build, or "host" (default: every platform)
#   NPM_BINARIES   a directory of garra builds named garra-<goos>-<goarch>[.exe]
#                  to pack as they are (the release's checksummed binaries);
#                  default: build each here
#
# Prints the path of each tarball, the main package's first.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${NPM_DIR:-bin/npm}"
src=npm/garra-mcp
manifest=hack/npm-manifest.js

NPM_VERSION="${NPM_VERSION:-$(hack/version.sh --bare)}"
if ! [[ $NPM_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "npm.sh: NPM_VERSION $NPM_VERSION is not a semantic version" >&2
	exit 2
fi

all="$(node "$manifest" platforms "$src/package.json")"
case "${NPM_PLATFORMS:-}" in
"") platforms="$all" ;;
host) platforms="$(node -p 'process.platform + "-" + process.arch')" ;;
*) platforms="$NPM_PLATFORMS" ;;
esac
for p in $platforms; do
	[[ " $all " == *" $p "* ]] || { echo "npm.sh: no platform package $p (there are: $all)" >&2; exit 2; }
done

mkdir -p "$out"
rm -f "$out"/*.tgz
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

cp -R "$src" "$stage/main"
node "$manifest" stamp "$stage/main/package.json" "$NPM_VERSION"
dirs=("$stage/main")

commit="$(git rev-parse HEAD 2>/dev/null || echo "")"
for p in $platforms; do
	os="${p%-*}" cpu="${p#*-}" exe=""
	case "$os" in win32) goos=windows exe=.exe ;; *) goos="$os" ;; esac
	case "$cpu" in x64) goarch=amd64 ;; *) goarch="$cpu" ;; esac
	mkdir -p "$stage/$p/bin"
	if [[ -n ${NPM_BINARIES:-} ]]; then
		install -m 0755 "$NPM_BINARIES/garra-$goos-$goarch$exe" "$stage/$p/bin/garra$exe"
	else
		CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" go build -trimpath \
			-ldflags "-s -w -X main.version=v$NPM_VERSION -X main.commit=$commit" \
			-o "$stage/$p/bin/garra$exe" ./cmd/garra
	fi
	node "$manifest" platform "$stage/main/package.json" "$p" "$stage/$p"
	dirs+=("$stage/$p")
done

# Packed side by side (each gzips a 60 MB binary), printed in order.
dest="$(cd "$out" && pwd)"
pids=()
for i in "${!dirs[@]}"; do
	(cd "${dirs[$i]}" && npm pack --silent --pack-destination "$dest" >"$stage/packed-$i") &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for i in "${!dirs[@]}"; do sed "s|^|$out/|" "$stage/packed-$i"; done
