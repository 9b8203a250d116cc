#!/usr/bin/env bash
# hack/sandbox-rootfs.sh — the base layer of the sandbox image: a Debian
# bookworm minimal root file system (debootstrap --variant=minbase) with the
# tools an agent's shell needs (bash, coreutils, git, ca-certificates), the
# user garra (65532:65532), /workspace owned by it, and git's safe.directory
# set to '*' (a workspace volume may be owned by another uid). It is what the
# Dockerfile's `sandbox` stage makes from debian:bookworm-slim, built from
# Debian's packages without a container engine.
#
# Usage: hack/sandbox-rootfs.sh            # prints the tarball's path (last line of stdout)
#        hack/sandbox-rootfs.sh --check    # prints it and exits 0 when cached, else exits 1
#
# The tarball is cached outside the clone, keyed by this script's content:
#   ${XDG_CACHE_HOME:-~/.cache}/garra/images/sandbox-rootfs-<sha12>.tar
# Needs root (debootstrap, chroot) and Debian's mirror (DEBIAN_MIRROR,
# default http://deb.debian.org/debian). Cold: ~2-4 min; cached: instant.
set -euo pipefail

SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=bash,coreutils,git,ca-certificates
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/garra/images"
key="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT="$CACHE/sandbox-rootfs-$key.tar"

log() { printf 'sandbox-rootfs.sh: %s\n' "$*" >&2; }

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
	log "installing debootstrap from Debian's packages"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
}

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
t0=$SECONDS
log "debootstrap $SUITE ($PACKAGES) from $MIRROR"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >&2

chroot "$root" /usr/sbin/groupadd --gid 65532 garra
chroot "$root" /usr/sbin/useradd --uid 65532 --gid 65532 --create-home --home-dir /home/garra --shell /bin/bash garra
install -d -o 65532 -g 65532 -m 0755 "$root/workspace"
chroot "$root" /usr/bin/git config --system --add safe.directory '*'

# What a container never uses: package caches and lists, docs, logs, and the
# device nodes debootstrap made (the runtime mounts its own /dev).
rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
	"$root"/dev/* "$root"/proc/* "$root"/sys/* "$root"/run/* "$root"/tmp/*
chmod 1777 "$root/tmp"

tar --numeric-owner --sort=name --mtime=@0 -C "$root" -cf "$work/rootfs.tar" .
mv -f "$work/rootfs.tar" "$OUT"
log "built $(du -h "$OUT" | cut -f1) in $((SECONDS - t0))s"
echo "$OUT"
