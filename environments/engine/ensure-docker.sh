#!/usr/bin/env bash
# Make sure a Docker engine answers on this host (idempotent).
#
# - If `docker info` already answers: exit 0.
# - Otherwise (root only): install docker.io with apt when dockerd is missing, clean up
#   after a dockerd/containerd that was killed abruptly (stale pid files, sockets, a dying
#   process that lingers), start `dockerd --storage-driver=overlay2` in the background and
#   wait up to 60 s for it to answer.
#
# Env: TASKFACTORY_DOCKERD_LOG (default /var/log/taskfactory-dockerd.log)
#      TASKFACTORY_DOCKERD_WAIT (seconds to wait for the daemon, default 60)
set -euo pipefail

LOG="${TASKFACTORY_DOCKERD_LOG:-/var/log/taskfactory-dockerd.log}"
WAIT_S="${TASKFACTORY_DOCKERD_WAIT:-60}"
DOCKER_PID_FILE=/var/run/docker.pid
CONTAINERD_DIR=/var/run/docker/containerd

say() { echo "ensure-docker: $*"; }

# docker_answers [SECONDS]: true when `docker info` answers within SECONDS (default 10).
docker_answers() {
    command -v docker >/dev/null 2>&1 && timeout -k 1 "${1:-10}" docker info >/dev/null 2>&1
}

if docker_answers 5; then
    say "Docker engine already answers; nothing to do"
    exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
    say "no Docker daemon answers and this script is not running as root;" \
        "start Docker yourself (or rerun as root)" >&2
    exit 1
fi

installed=""
if ! command -v dockerd >/dev/null 2>&1; then
    say "dockerd missing; installing docker.io with apt"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io
    installed="installed docker.io, "
fi

# pid_alive PID NAME: true when PID is a live process whose command name contains NAME.
pid_alive() {
    local pid="$1" name="$2" comm
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/comm" ]] || return 1
    comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
    # zombies are not "alive" for our purposes
    if grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; then
        return 1
    fi
    [[ "$comm" == *"$name"* ]]
}

# A dockerd named in the pid file may be dying (or still starting): give it ~20 s.
if [[ -f "$DOCKER_PID_FILE" ]]; then
    old_pid="$(tr -dc '0-9' <"$DOCKER_PID_FILE" || true)"
    if pid_alive "$old_pid" dockerd; then
        say "dockerd pid $old_pid is still around; waiting up to 20 s for it to answer or exit"
        deadline=$((SECONDS + 20))
        while ((SECONDS < deadline)); do
            if docker_answers 2; then
                say "existing dockerd (pid $old_pid) now answers"
                exit 0
            fi
            pid_alive "$old_pid" dockerd || break
            sleep 1
        done
        if pid_alive "$old_pid" dockerd; then
            say "dockerd pid $old_pid does not answer; killing it"
            kill -9 "$old_pid" 2>/dev/null || true
            for _ in $(seq 1 10); do
                pid_alive "$old_pid" dockerd || break
                sleep 0.5
            done
        fi
    fi
    rm -f "$DOCKER_PID_FILE"
fi

# Stale containerd (the one dockerd spawns) pid file / sockets.
if [[ -d "$CONTAINERD_DIR" ]]; then
    cpid_file="$CONTAINERD_DIR/containerd.pid"
    if [[ -f "$cpid_file" ]]; then
        cpid="$(tr -dc '0-9' <"$cpid_file" || true)"
        if pid_alive "$cpid" containerd; then
            kill -9 "$cpid" 2>/dev/null || true
            sleep 1
        fi
        rm -f "$cpid_file"
    fi
    rm -f "$CONTAINERD_DIR"/containerd.sock "$CONTAINERD_DIR"/containerd-debug.sock \
        "$CONTAINERD_DIR"/containerd.sock.ttrpc 2>/dev/null || true
fi
rm -f /var/run/docker.sock

mkdir -p "$(dirname "$LOG")"
nohup dockerd --storage-driver=overlay2 >>"$LOG" 2>&1 </dev/null &
new_pid=$!
disown "$new_pid" 2>/dev/null || true

deadline=$((SECONDS + WAIT_S))
while ((SECONDS < deadline)); do
    if docker_answers 3; then
        say "${installed}started dockerd (pid $new_pid, storage overlay2, log $LOG)"
        exit 0
    fi
    if ! kill -0 "$new_pid" 2>/dev/null; then
        break
    fi
    sleep 1
done

say "dockerd did not answer within ${WAIT_S} s; last lines of $LOG:" >&2
tail -n 40 "$LOG" >&2 || true
exit 1
