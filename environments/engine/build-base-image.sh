#!/usr/bin/env bash
# Build the local base image taskfactory/base:bookworm without any container registry.
#
# debootstrap (minbase) a Debian bookworm rootfs from the apt mirror, add user `agent`
# (uid/gid 1000) and /workspace, shrink it, tar it to a cache file and `docker import` it.
# Where a registry is reachable, environments/engine/Dockerfile.base builds an equivalent.
#
# Skips entirely when the image already exists; reuses the cached tar when present.
# Env: TASKFACTORY_BASE_IMAGE (default taskfactory/base:bookworm)
#      TASKFACTORY_CACHE_DIR  (default /var/cache/taskfactory)
#      DEBIAN_MIRROR          (default http://deb.debian.org/debian)
set -euo pipefail

IMAGE="${TASKFACTORY_BASE_IMAGE:-taskfactory/base:bookworm}"
CACHE_DIR="${TASKFACTORY_CACHE_DIR:-/var/cache/taskfactory}"
CACHE_TAR="$CACHE_DIR/base-bookworm.tar"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
PACKAGES=python3,sqlite3,git,coreutils,curl,ca-certificates,procps

say() { echo "build-base-image: $*"; }

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "image $IMAGE already exists; skipping"
    exit 0
fi

t_start=$(date +%s)
t_boot="skipped (cached rootfs)"

if [[ ! -s "$CACHE_TAR" ]]; then
    if [[ "$(id -u)" -ne 0 ]]; then
        say "debootstrap needs root; rerun as root (or provide $CACHE_TAR)" >&2
        exit 1
    fi
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "debootstrap missing; installing it with apt"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap
    fi

    WORK="$(mktemp -d /var/tmp/taskfactory-rootfs.XXXXXX)"
    cleanup() {
        # never follow into a half-mounted chroot
        for m in proc sys dev/pts dev; do
            mountpoint -q "$WORK/rootfs/$m" 2>/dev/null && umount -l "$WORK/rootfs/$m" || true
        done
        rm -rf --one-file-system "$WORK"
        rm -f "$CACHE_TAR.tmp.$$"
    }
    trap cleanup EXIT
    ROOTFS="$WORK/rootfs"

    say "debootstrap $SUITE (minbase + $PACKAGES) from $MIRROR"
    t0=$(date +%s)
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR"
    t_boot="$(( $(date +%s) - t0 ))s"
    say "debootstrap took ${t_boot}"

    chroot "$ROOTFS" /usr/sbin/groupadd --gid 1000 agent
    chroot "$ROOTFS" /usr/sbin/useradd --uid 1000 --gid 1000 --create-home \
        --home-dir /home/agent --shell /bin/bash agent
    mkdir -p "$ROOTFS/workspace"
    chown 1000:1000 "$ROOTFS/workspace"
    chmod 0755 "$ROOTFS/workspace"

    # shrink: apt caches/lists, logs, docs we do not need
    chroot "$ROOTFS" apt-get clean
    rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
        "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/cache/debconf/*-old
    find "$ROOTFS/var/log" -mindepth 1 -type f -delete
    rm -rf "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*
    rm -rf "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/*
    # the container runtime provides these
    : >"$ROOTFS/etc/hostname"
    rm -f "$ROOTFS/etc/resolv.conf"

    mkdir -p "$CACHE_DIR"
    tar --numeric-owner --xattrs --one-file-system -C "$ROOTFS" -cf "$CACHE_TAR.tmp.$$" .
    mv -f "$CACHE_TAR.tmp.$$" "$CACHE_TAR"
    say "cached rootfs at $CACHE_TAR ($(du -h "$CACHE_TAR" | cut -f1))"
else
    say "using cached rootfs $CACHE_TAR"
fi

t0=$(date +%s)
docker import \
    --change 'WORKDIR /workspace' \
    --change 'USER 1000:1000' \
    --change 'ENV LANG=C.UTF-8 LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'LABEL taskfactory.image=base' \
    --change 'CMD ["sleep","infinity"]' \
    --message "taskfactory base image (debootstrap $SUITE minbase)" \
    "$CACHE_TAR" "$IMAGE" >/dev/null
t_import=$(( $(date +%s) - t0 ))

say "built $IMAGE: debootstrap ${t_boot}, import ${t_import}s, total $(( $(date +%s) - t_start ))s"
