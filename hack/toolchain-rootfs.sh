#!/usr/bin/env bash
# hack/toolchain-rootfs.sh — a team's own toolchain image for the end-to-end
# suite: a Debian bookworm minimal root file system (debootstrap
# --variant=minbase) with make and python3 and no garra at all, the kind of
# image an orchestrator names in sandbox.image (the operator injects garra
# with an init container).
#
# Usage: hack/toolchain-rootfs.sh            # prints the tarball's path (last line of stdout)
#        hack/toolchain-rootfs.sh --check    # prints it and exits 0 when cached, else exits 1
#
# Cached outside the clone, keyed by this script's content:
#   ${XDG_CACHE_HOME:-~/.cache}/garra/images/toolchain-rootfs-<sha12>.tar
# Needs root (debootstrap) and Debian's mirror (DEBIAN_MIRROR, default
# http://deb.debian.org/debian).
set -euo pipefail

SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=make,python3
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/garra/images"
key="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT="$CACHE/toolchain-rootfs-$key.tar"

log() { printf 'toolchain-rootfs.sh: %s\n' "$*" >&2; }

if [ -s "$OUT" ]; then
	echo "$OUT"
	exit 0
fi
if [ "${1:-}" = --check ]; then
	log "not cached: $OUT"
	exit 1
fi
[ "$(id -u)" = 0 ] || {
	log "debootstrap needs root"
	exit 1
}
command -v debootstrap >/dev/null || {
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
}

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/tcroot.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
t0=$SECONDS
log "debootstrap $SUITE ($PACKAGES) from $MIRROR"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >&2
rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
	"$root"/dev/* "$root"/proc/* "$root"/sys/* "$root"/run/* "$root"/tmp/*
chmod 1777 "$root/tmp"
tar --numeric-owner --sort=name --mtime=@0 -C "$root" -cf "$work/rootfs.tar" .
mv -f "$work/rootfs.tar" "$OUT"
log "built $(du -h "$OUT" | cut -f1) in $((SECONDS - t0))s"
echo "$OUT"
