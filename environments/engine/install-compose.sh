#!/usr/bin/env bash
# Install the Docker Compose v2 CLI plugin (`docker compose`) from the Debian archive.
#
# Debian 12 ships only the Python docker-compose v1; Debian 13 (trixie)'s `docker-compose`
# package carries the Go v2 plugin as one static binary. This script downloads that .deb
# with a private apt configuration (the system's sources are not touched), extracts the
# plugin and installs it into the CLI plugin folder. Idempotent: does nothing when
# `docker compose version` already answers.
#
# Harbor's docker environment drives containers through `docker compose`; taskfactory
# itself does not need it.
#
# Env: TASKFACTORY_COMPOSE_SUITE   (default trixie)
#      TASKFACTORY_COMPOSE_PLUGINS (default /usr/local/lib/docker/cli-plugins as root,
#                                   else ~/.docker/cli-plugins)
#      DEBIAN_MIRROR               (default http://deb.debian.org/debian)
set -euo pipefail

SUITE="${TASKFACTORY_COMPOSE_SUITE:-trixie}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if [[ "$(id -u)" -eq 0 ]]; then
    DEFAULT_PLUGINS=/usr/local/lib/docker/cli-plugins
else
    DEFAULT_PLUGINS="$HOME/.docker/cli-plugins"
fi
PLUGINS="${TASKFACTORY_COMPOSE_PLUGINS:-$DEFAULT_PLUGINS}"

say() { echo "install-compose: $*"; }

if docker compose version >/dev/null 2>&1; then
    say "$(docker compose version) already installed; nothing to do"
    exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/taskfactory-compose.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/archives/partial" "$WORK/etc"
cat >"$WORK/etc/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main
EOF
APT=(-o "Dir::Etc::sourcelist=$WORK/etc/sources.list" -o "Dir::Etc::sourceparts=-"
     -o "Dir::State::Lists=$WORK/lists" -o "Dir::Cache::Archives=$WORK/archives"
     -o "Dir::State::status=/dev/null" -o "APT::Get::List-Cleanup=0")
[[ "$(id -u)" -eq 0 ]] && APT+=(-o "APT::Sandbox::User=root")  # files in a private temp dir

say "fetching the $SUITE package index from $MIRROR"
apt-get "${APT[@]}" -qq update
version="$(apt-cache "${APT[@]}" show docker-compose | sed -n 's/^Version: //p' | head -n1)"
[[ -n "$version" ]] || { say "no docker-compose package in $SUITE" >&2; exit 1; }
say "downloading docker-compose $version"
(cd "$WORK" && apt-get "${APT[@]}" -qq download "docker-compose=$version")
dpkg-deb -x "$WORK"/docker-compose_*.deb "$WORK/root"
binary="$(find "$WORK/root" -type f -path '*cli-plugins/docker-compose' | head -n1)"
[[ -n "$binary" ]] || { say "the package holds no cli-plugins/docker-compose" >&2; exit 1; }
install -D -m 0755 "$binary" "$PLUGINS/docker-compose"
say "installed $PLUGINS/docker-compose: $(docker compose version)"
