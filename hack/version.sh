#!/usr/bin/env bash
# hack/version.sh — the one version of everything Garra releases: the
# binaries' `garra version`, the image tags, the npm packages, the chart's
# version and appVersion, and server.json all derive from the VERSION file
# (X.Y.Z, no leading v). Prints:
#
#   vX.Y.Z                 when HEAD is tagged vX.Y.Z (a release)
#   vX.Y.Z-dev.g<commit>   otherwise (sorts before the release it leads to)
#
# A tag v* on HEAD that is not vX.Y.Z is an error: the release would carry
# two versions. --bare prints the same without the leading v (npm, Helm,
# server.json's version field).
set -euo pipefail
cd "$(dirname "$0")/.."

file="$(tr -d ' \n' <VERSION)"
if ! [[ $file =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "version.sh: VERSION holds \"$file\", not a semantic version X.Y.Z" >&2
	exit 2
fi

version="v$file-dev"
if commit="$(git rev-parse --short=12 HEAD 2>/dev/null)"; then
	version="v$file-dev.g$commit"
	for tag in $(git tag --points-at HEAD 'v*' 2>/dev/null); do
		if [[ $tag != "v$file" ]]; then
			echo "version.sh: HEAD is tagged $tag but VERSION says $file: tag v$file, or change VERSION first" >&2
			exit 2
		fi
		version="$tag"
	done
fi

case "${1:-}" in
--bare) echo "${version#v}" ;;
"") echo "$version" ;;
*)
	echo "usage: hack/version.sh [--bare]" >&2
	exit 2
	;;
esac
