#!/usr/bin/env bash
# down.sh - stop what up.sh started and clean up after it, touching only this
# instance (its PID file, its state directory, its socket).
#
# Usage: scripts/real_cri/down.sh SOCKET [STATE_DIR] [--purge]     (as root)
#
# 1. while containerd answers: stop and remove every pod sandbox over CRI;
# 2. stop containerd (SIGTERM, SIGKILL after 10 s), if the PID file names it;
# 3. remove leftovers of this instance: runc containers under its runc root,
#    shims started for its socket, mounts under STATE_DIR, its CNI bridge and
#    CNI cache entries;
# 4. --purge: delete STATE_DIR too.
# Exit status 0 when nothing of this instance is left.
set -uo pipefail

say() { printf '[real-cri down] %s\n' "$*" >&2; }

purge=0
args=()
for a in "$@"; do
  if [ "$a" = --purge ]; then purge=1; else args+=("$a"); fi
done
[ ${#args[@]} -ge 1 ] || { say "usage: $0 SOCKET [STATE_DIR] [--purge]"; exit 2; }
[ "$(id -u)" -eq 0 ] || { say "must run as root"; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SOCK=$(readlink -m -- "${args[0]}")
STATE=$(readlink -m -- "${args[1]:-$(dirname -- "$SOCK")/state}")
# What lies under STATE is unmounted and removed: never the root or a
# top-level directory, whatever an argument looked like.
if [ "$STATE" = / ] || [ "$(dirname -- "$STATE")" = / ]; then
  say "refusing state directory \"$STATE\""
  exit 2
fi
DENO=${DENO:-npx -y deno@2.9.3}
PIDFILE=$STATE/containerd.pid
rc=0

running() {
  local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ]
}

pid=""
if [ -s "$PIDFILE" ] && running "$(cat "$PIDFILE")"; then
  pid=$(cat "$PIDFILE")
  # trust the PID file only if that process is this instance's containerd
  if ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--config $STATE/containerd.toml"; then
    say "pid $pid is not this instance's containerd: left alone"
    pid=""
  fi
fi

# 1. pods, over CRI
if [ -n "$pid" ] && [ -S "$SOCK" ]; then
  # shellcheck disable=SC2086
  (cd "$REPO" && timeout 300 $DENO run --frozen --quiet --allow-read --allow-write --allow-env --allow-sys \
    --allow-net scripts/real_cri/cri_ctl.ts "$SOCK" remove-all-pods) ||
    say "some pods could not be removed over CRI; cleaning up by force"
fi

# 2. containerd
if [ -n "$pid" ]; then
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do running "$pid" || break; sleep 0.1; done
  if running "$pid"; then
    say "containerd ignored SIGTERM; SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
  fi
  running "$pid" && { say "containerd pid $pid still runs"; rc=1; }
fi

# 3. leftovers
RUNC_ROOT=$STATE/runc/k8s.io
if [ -d "$RUNC_ROOT" ]; then
  for id in $(runc --root "$RUNC_ROOT" list -q 2>/dev/null); do
    say "deleting runc container $id"
    runc --root "$RUNC_ROOT" kill "$id" KILL 2>/dev/null
    runc --root "$RUNC_ROOT" delete --force "$id" 2>/dev/null || rc=1
  done
fi

killed_shims=0
for proc in /proc/[0-9]*; do
  cmd=$(tr '\0' '\n' 2>/dev/null <"$proc/cmdline") || continue
  case "$cmd" in *containerd-shim*) ;; *) continue ;; esac
  # a shim names its containerd with "-address SOCKET"
  if printf '%s\n' "$cmd" | grep -qxF -- "$SOCK"; then
    say "killing shim ${proc#/proc/}"
    kill -KILL "${proc#/proc/}" 2>/dev/null
    killed_shims=1
  fi
done
# a killed shim leaves its socket in the fixed /run/containerd/s, named by
# sha256("<containerd address>/<namespace>/<task id>")
if [ "$killed_shims" = 1 ] && [ -d "$STATE/run/io.containerd.runtime.v2.task" ]; then
  for task in "$STATE"/run/io.containerd.runtime.v2.task/*/*; do
    [ -d "$task" ] || continue
    key="$SOCK/$(basename "$(dirname "$task")")/$(basename "$task")"
    rm -f "/run/containerd/s/$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)"
  done
fi

# mounts under STATE, deepest first
for m in $(awk -v d="$STATE/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -ru); do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || { say "cannot unmount $m"; rc=1; }
done

CONFLIST=$STATE/cni/conf/10-real-cri.conflist
if [ -f "$CONFLIST" ]; then
  bridge=$(sed -n 's/.*"bridge": *"\([^"]*\)".*/\1/p' "$CONFLIST" | head -n1)
  net=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$CONFLIST" | head -n1)
  if [ -n "$bridge" ] && ip link show "$bridge" >/dev/null 2>&1; then
    ip link del "$bridge" || rc=1
  fi
  # libcni caches results in /var/lib/cni whatever the config says
  [ -n "$net" ] && rm -f /var/lib/cni/results/"$net"-*
  for sb in "$STATE"/run/io.containerd.grpc.v1.cri/sandboxes/*; do
    [ -e "$sb" ] && rm -f "/var/lib/cni/results/cni-loopback-$(basename "$sb")-lo"
  done
fi
for cg in /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
  [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
done
rmdir /run/containerd/s 2>/dev/null && rmdir /run/containerd 2>/dev/null

rm -f "$PIDFILE" "$SOCK" "$SOCK.ttrpc"
if [ "$purge" = 1 ]; then
  if [ "$rc" = 0 ]; then rm -rf "$STATE"; else say "cleanup incomplete: $STATE kept"; fi
fi
say "done (status $rc)"
exit "$rc"
