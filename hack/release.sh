#!/usr/bin/env bash
# hack/release.sh — Garra's release artifacts, built one way for the release
# workflow (.github/workflows/release.yml, on a tag v*) and for
# `make release-dry-run` (offline, into a temporary directory).
#
#   hack/release.sh build DIR   build every artifact into DIR (replaced):
#     DIR/dist/garra-<os>-<arch>[.exe]   linux, darwin (amd64, arm64), windows (amd64):
#                                        static, -trimpath, `garra version` = hack/version.sh
#     DIR/dist/garra-<os>-<arch>.cdx.json  CycloneDX SBOM of each (its Go modules)
#     DIR/dist/SHA256SUMS                the two above
#     DIR/npm/*.tgz                      @garraia/garra-mcp and its five platform
#                                        packages, holding the dist binaries
#     DIR/images/garra, garra-sandbox    OCI layouts, one multi-arch index each
#                                        (linux/amd64, linux/arm64; hack/imagebuild)
#     DIR/chart/garra-operator-X.tgz     the Helm chart (test/chart/release)
#     DIR/server.json                    the MCP registry entry (hack/serverjson)
#     DIR/version                        the version stamped (hack/version.sh)
#   hack/release.sh check DIR   read DIR back: checksums; each binary's build
#                               info (platform, -trimpath) and version; the SBOMs;
#                               the npm tarballs installed offline and started
#                               through npx and MCP initialize (npm/npm_test.go);
#                               the images' platforms, configs and binaries
#   hack/release.sh dry-run     build and check into a temporary directory, lint
#                               the workflows (actionlint), list the artifacts
#                               with sizes and checksums, remove the directory
#                               (RELEASE_KEEP=1 keeps it)
#
# The chart and server.json are checked as they are written: Helm's lint and
# template, the MCP registry's type and schema.
#
# Environment:
#   SANDBOX_BASES  ARCH=ROOTFS[,...]: the sandbox image's base per architecture
#                  (hack/sandbox-rootfs.sh run on that architecture). Default:
#                  this machine's, when hack/sandbox-rootfs.sh has it cached;
#                  else no sandbox image (said on stderr). check requires the
#                  sandbox image for exactly these architectures.
set -euo pipefail
cd "$(dirname "$0")/.."
top="$(pwd)"

# Tools built through the Go module proxy, pinned.
CYCLONEDX=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
ACTIONLINT=github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# The five platforms of the binaries and npm packages (npm/garra-mcp's
# optionalDependencies name the same, a check below compares) and the
# images' architectures.
PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"
IMAGE_ARCHES="amd64 arm64"

log() { printf 'release.sh: [%3ss] %s\n' "$SECONDS" "$*" >&2; }
die() {
	log "$*"
	exit 1
}

abs() { mkdir -p "$1" && (cd "$1" && pwd); }

# sandbox_bases prints SANDBOX_BASES, or this machine's cached root file
# system as ARCH=PATH, or nothing.
sandbox_bases() {
	if [[ -n ${SANDBOX_BASES+set} ]]; then
		echo "$SANDBOX_BASES"
	elif base="$(hack/sandbox-rootfs.sh --check 2>/dev/null | tail -n1)"; then
		echo "$(go env GOARCH)=$base"
	fi
}

# build_garra DIR VERSION COMMIT GOOS GOARCH: DIR/dist/garra-GOOS-GOARCH
# and its SBOM.
build_garra() {
	local dir="$1" v="$2" commit="$3" os="$4" arch="$5" exe="" out
	[[ $os == windows ]] && exe=.exe
	out="$dir/dist/garra-$os-$arch$exe"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath \
		-ldflags "-s -w -X main.version=$v -X main.commit=$commit" -o "$out" ./cmd/garra
	GOOS="$os" GOARCH="$arch" "$dir/tools/cyclonedx-gomod" bin -json -std -version "$v" \
		-output "$dir/dist/garra-$os-$arch.cdx.json" "$out" 2>/dev/null || die "SBOM of $out: cyclonedx-gomod failed"
}

build() {
	local dir v bare commit bases
	[[ $# == 1 ]] || die "usage: hack/release.sh build DIR"
	rm -rf "$1"
	dir="$(abs "$1")"
	v="$(hack/version.sh)"
	bare="${v#v}"
	commit="$(git rev-parse HEAD 2>/dev/null || true)"
	mkdir -p "$dir/dist" "$dir/bin" "$dir/npm" "$dir/chart"
	echo "$v" >"$dir/version"
	log "building $v"

	# cyclonedx-gomod names the platform in its package URLs from `go env`,
	# so it runs with the binary's GOOS and GOARCH: built for this machine
	# first.
	GOBIN="$dir/tools" go install "$CYCLONEDX"

	# Two builds at a time: warm, each is a link of a 60 MB binary, mostly
	# on one core; cold, more would only compete for memory.
	local p running=0 failed=0
	for p in $PLATFORMS; do
		if ((running >= 2)); then
			wait -n || failed=1
			running=$((running - 1))
		fi
		build_garra "$dir" "$v" "$commit" "${p%/*}" "${p#*/}" &
		running=$((running + 1))
	done
	while ((running > 0)); do
		wait -n || failed=1
		running=$((running - 1))
	done
	[[ $failed == 0 ]] || die "a build failed"
	(cd "$dir/dist" && sha256sum -- * >SHA256SUMS)
	log "binaries and SBOMs done"

	# The images take linux garra and manager builds from one directory.
	local arch pids=() pid
	for arch in $IMAGE_ARCHES; do
		ln -f "$dir/dist/garra-linux-$arch" "$dir/bin/garra-linux-$arch"
		CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags "-s -w" -o "$dir/bin/manager-linux-$arch" ./cmd/manager &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
	[[ $failed == 0 ]] || die "a manager build failed"

	log "managers done"
	NPM_DIR="$dir/npm" NPM_VERSION="$bare" NPM_BINARIES="$dir/dist" hack/npm.sh >/dev/null
	log "npm tarballs done"

	bases="$(sandbox_bases)"
	[[ -n $bases ]] || log "no sandbox image: no SANDBOX_BASES and no cached root file system (hack/sandbox-rootfs.sh builds it, as root)"
	local platforms=""
	for arch in $IMAGE_ARCHES; do platforms+="${platforms:+,}linux/$arch"; done
	(cd hack/imagebuild && go run . release -out "$dir/images" -version "$v" -bin "$dir/bin" \
		-revision "$commit" -platforms "$platforms" ${bases:+-sandbox-base "$bases"}) >/dev/null
	log "images done"

	(cd test/chart && go run ./release -version "$bare" -out "$dir/chart") >/dev/null
	(cd hack/serverjson && go run . -in "$top/server.json" -version "$bare" -out "$dir/server.json") >/dev/null
}

check() {
	local dir v bare
	[[ $# == 1 ]] || die "usage: hack/release.sh check DIR"
	dir="$(abs "$1")"
	v="$(cat "$dir/version")" # what build stamped
	bare="${v#v}"

	(cd "$dir/dist" && sha256sum --quiet --strict -c SHA256SUMS) || die "SHA256SUMS does not match dist/"

	# Each binary, without running it: its build info names the platform,
	# -trimpath and no cgo, and it carries the version.
	local p os arch exe bin info
	for p in $PLATFORMS; do
		os="${p%/*}" arch="${p#*/}" exe=""
		[[ $os == windows ]] && exe=.exe
		bin="$dir/dist/garra-$os-$arch$exe"
		info="$(go version -m "$bin")" || die "$bin: not a Go binary"
		for want in "build	GOOS=$os" "build	GOARCH=$arch" "build	-trimpath=true" "build	CGO_ENABLED=0"; do
			grep -qF -- "$want" <<<"$info" || die "$bin: build info lacks \"$want\""
		done
		# With -trimpath the build info leaves -ldflags out; the -X string
		# is in the binary's data.
		grep -qaF -- "$v" "$bin" || die "$bin does not carry the version $v"
		# shellcheck disable=SC2016 # JavaScript's ${}, not the shell's
		node -e '
			const [file, version, os, arch] = process.argv.slice(1);
			const b = JSON.parse(require("fs").readFileSync(file, "utf8"));
			const c = b.metadata.component;
			const q = (k, v) => new RegExp(`[?&]${k}=${v}([&#]|$)`).test(c.purl);
			if (b.bomFormat !== "CycloneDX" || c.version !== version || !q("goos", os) || !q("goarch", arch) || !(b.components || []).length) {
				console.error(`${file}: ${b.bomFormat} of ${c.name}@${c.version} (${c.purl}), ${(b.components || []).length} components`);
				process.exit(1);
			}' "$dir/dist/garra-$os-$arch.cdx.json" "$v" "$os" "$arch" || die "SBOM of $bin"
	done
	local host
	host="$dir/dist/garra-$(go env GOOS)-$(go env GOARCH)"
	[[ "$("$host" version)" == "garra $v "* ]] || die "$host version says \"$("$host" version)\", want $v"

	# npm: one tarball per platform plus the main package, all of this
	# version; the host's installed and started (npm/npm_test.go).
	local want_npm
	want_npm="$(node hack/npm-manifest.js platforms npm/garra-mcp/package.json | wc -w)"
	[[ $(find "$dir/npm" -name "*-$bare.tgz" | wc -l) == $((want_npm + 1)) ]] ||
		die "npm/: want $((want_npm + 1)) tarballs of $bare, have: $(ls "$dir/npm")"
	local npm_names=""
	for p in $PLATFORMS; do
		os="${p%/*}" arch="${p#*/}"
		[[ $os == windows ]] && os=win32
		[[ $arch == amd64 ]] && arch=x64
		npm_names+="$os-$arch"$'\n'
	done
	[[ "$(sort <<<"$npm_names" | xargs)" == "$(node hack/npm-manifest.js platforms npm/garra-mcp/package.json | tr ' ' '\n' | sort | xargs)" ]] ||
		die "npm/garra-mcp's platform packages are not the release's platforms ($PLATFORMS)"
	GARRA_NPM_TARBALLS="$dir/npm" go test -count=1 -run '^TestNpxStartsTheStdioServer$' ./npm/ >/dev/null ||
		die "the npm tarballs: install and initialize failed (GARRA_NPM_TARBALLS=$dir/npm go test -v ./npm/)"

	# Images: every architecture of garra, the sandbox's of SANDBOX_BASES.
	local platforms="" sandbox=""
	for arch in $IMAGE_ARCHES; do platforms+="${platforms:+,}linux/$arch"; done
	local kv
	for kv in $(sandbox_bases | tr ',' ' '); do sandbox+="${sandbox:+,}linux/${kv%%=*}"; done
	(cd hack/imagebuild && go run . inspect -layout "$dir/images/garra" -version "$v" -platforms "$platforms" -run-version)
	if [[ -n $sandbox ]]; then
		(cd hack/imagebuild && go run . inspect -layout "$dir/images/garra-sandbox" -version "$v" -platforms "$sandbox" -run-version)
	elif [[ -e $dir/images/garra-sandbox ]]; then
		die "images/garra-sandbox exists but no sandbox architectures are expected"
	fi
	[[ -s $dir/server.json && -s $dir/chart/garra-operator-$bare.tgz ]] || die "server.json or the chart is missing"
}

# list prints each artifact: size, sha256, path under DIR.
list() {
	local dir="$1" f
	(cd "$dir" && find dist npm chart server.json -type f | sort | while read -r f; do
		printf '%10s  %s  %s\n' "$(numfmt --to=iec --suffix=B "$(stat -c %s "$f")")" "$(sha256sum "$f" | cut -c1-64)" "$f"
	done)
}

dry_run() {
	local dir t0=$SECONDS
	dir="$(mktemp -d "${TMPDIR:-/tmp}/garra-release.XXXXXX")"
	if [[ -z ${RELEASE_KEEP:-} ]]; then
		# shellcheck disable=SC2064 # expanded now: dir is local
		trap "rm -rf '$dir'" EXIT
	fi
	build "$dir"
	local built=$((SECONDS - t0))
	echo "== images (read back from the OCI layouts)"
	check "$dir"
	echo "== workflows: actionlint ($ACTIONLINT)"
	go run "$ACTIONLINT" -no-color || die "actionlint found problems in .github/workflows"
	echo "== artifacts of $(cat "$dir/version")"
	list "$dir"
	echo "== built in ${built}s, checked in $((SECONDS - t0 - built))s${RELEASE_KEEP:+; kept in $dir}"
}

case "${1:-}" in
build) shift && build "$@" ;;
check) shift && check "$@" ;;
dry-run) dry_run ;;
*) die "usage: hack/release.sh build DIR | check DIR | dry-run" ;;
esac
