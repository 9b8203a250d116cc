#!/usr/bin/env bash
# hack/postgres-rootfs.sh — the base layer of the PostgreSQL image the
# end-to-end suite runs as the shared store of a replicated gateway: a
# Debian bookworm minimal root file system (debootstrap --variant=minbase)
# with Debian's postgresql package, its user postgres moved to 65532:65532
# (the uid every Garra pod runs as), and no cluster: the pod runs initdb on
# its own volume at start.
#
# Usage: hack/postgres-rootfs.sh            # prints the tarball's path (last line of stdout)
#        hack/postgres-rootfs.sh --check    # prints it and exits 0 when cached, else exits 1
#
# The tarball is cached outside the clone, keyed by this script's content:
#   ${XDG_CACHE_HOME:-~/.cache}/garra/images/postgres-rootfs-<sha12>.tar
# Needs root (debootstrap, chroot) and Debian's mirror (DEBIAN_MIRROR,
# default http://deb.debian.org/debian). Cold: a few minutes; cached: instant.
set -euo pipefail

SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=postgresql
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/garra/images"
key="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT="$CACHE/postgres-rootfs-$key.tar"

log() { printf 'postgres-rootfs.sh: %s\n' "$*" >&2; }

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
work="$(mktemp -d "$CACHE/pgroot.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
t0=$SECONDS
log "debootstrap $SUITE ($PACKAGES) from $MIRROR"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >&2

# The package's own cluster (and its config) is dropped: the pod makes a
# fresh one with initdb, owned by the uid it runs as.
rm -rf "$root"/etc/postgresql/*/main "$root"/var/lib/postgresql/*/main
chroot "$root" /usr/sbin/groupmod --gid 65532 postgres
chroot "$root" /usr/sbin/usermod --uid 65532 --gid 65532 postgres
chown -R 65532:65532 "$root/var/lib/postgresql" "$root/var/run/postgresql"
# One stable path for the server binaries, whatever the major version.
bindir="$(ls -d "$root"/usr/lib/postgresql/*/bin | head -n1)"
ln -s "${bindir#"$root"}" "$root/usr/lib/postgresql/bin"

rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
	"$root"/dev/* "$root"/proc/* "$root"/sys/* "$root"/run/* "$root"/tmp/*
chmod 1777 "$root/tmp"

tar --numeric-owner --sort=name --mtime=@0 -C "$root" -cf "$work/rootfs.tar" .
mv -f "$work/rootfs.tar" "$OUT"
log "built $(du -h "$OUT" | cut -f1) in $((SECONDS - t0))s"
echo "$OUT"
