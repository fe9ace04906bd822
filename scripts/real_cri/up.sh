#!/usr/bin/env bash
# up.sh - start a private containerd (CRI plugin, runc, CNI bridge) for the
# real-runtime tests, from Debian packages only and without any registry.
#
# Usage: scripts/real_cri/up.sh SOCKET [STATE_DIR]      (as root)
#
#   SOCKET     where containerd listens (gRPC: containerd API and CRI runtime.v1)
#   STATE_DIR  everything else: config, root, state, CNI, images, logs
#              (default: <directory of SOCKET>/state)
#
# Prints the containerd PID on stdout; progress goes to stderr. Running it
# again after containerd died restarts it on the same state (pods survive, as
# their shims do). Stop everything with scripts/real_cri/down.sh.
#
# Knobs: REAL_CRI_SKIP_APT=1 (never apt-get), REAL_CRI_SUBNET (default
# 10.88.0.0/16), REAL_CRI_READY_TIMEOUT (seconds, default 60),
# DENO (command running deno, default "npx -y deno@2.9.3").
#
# Images imported into the k8s.io namespace, built here from busybox-static:
#   localhost/real-cri/pause:1    /bin/sleep infinity (the sandbox image)
#   localhost/real-cri/busybox:1  /bin/sh
set -euo pipefail

say() { printf '[real-cri up] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[ $# -ge 1 ] || die "usage: $0 SOCKET [STATE_DIR]"
[ "$(id -u)" -eq 0 ] || die "must run as root"

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SOCK=$(readlink -m -- "$1")
STATE=$(readlink -m -- "${2:-$(dirname -- "$SOCK")/state}")
SUBNET=${REAL_CRI_SUBNET:-10.88.0.0/16}
READY_TIMEOUT=${REAL_CRI_READY_TIMEOUT:-60}
DENO=${DENO:-npx -y deno@2.9.3}
TAG=$(printf '%s' "$SOCK" | sha256sum | cut -c1-8)
BRIDGE=rcri$TAG
PIDFILE=$STATE/containerd.pid
CONFIG=$STATE/containerd.toml
LOG=$STATE/containerd.log

[ ${#SOCK} -lt 100 ] || die "socket path too long: $SOCK"

running() { # PID alive and not a zombie
  local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ]
}
if [ -s "$PIDFILE" ] && running "$(cat "$PIDFILE")"; then
  die "containerd of $STATE already runs (pid $(cat "$PIDFILE")); use down.sh first"
fi

# ------------------------------------------------------------------ tools
# Checked by what is installed, not by package name: apt-get runs only when a
# tool is missing (CI installs the packages beforehand), and never with
# REAL_CRI_SKIP_APT=1.
CNI_BIN=/usr/lib/cni
static_busybox() { # the image's only binary must run without a dynamic loader
  [ -x /bin/busybox ] || return 1
  local out; out=$(LC_ALL=C ldd /bin/busybox 2>&1) || true
  case "$out" in *"not a dynamic executable"* | *"statically linked"*) return 0 ;; esac
  return 1
}
missing_packages() { # prints the Debian packages of the missing tools
  local m="" b
  for b in containerd ctr containerd-shim-runc-v2; do
    command -v "$b" >/dev/null || { m="$m containerd"; break; }
  done
  command -v runc >/dev/null || m="$m runc"
  for b in bridge host-local loopback; do
    [ -x "$CNI_BIN/$b" ] || { m="$m containernetworking-plugins"; break; }
  done
  static_busybox || m="$m busybox-static"
  command -v ip >/dev/null || m="$m iproute2" # down.sh removes the bridge with it
  printf '%s' "$m"
}
missing=$(missing_packages)
if [ -n "$missing" ]; then
  [ "${REAL_CRI_SKIP_APT:-0}" = 1 ] && die "missing packages:$missing (REAL_CRI_SKIP_APT=1)"
  command -v apt-get >/dev/null || die "missing packages:$missing (and no apt-get here)"
  say "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  apt-get install -y --no-install-recommends $missing >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends $missing >&2; }
  missing=$(missing_packages)
  [ -z "$missing" ] || die "still missing after apt-get:$missing"
fi

mkdir -p "$STATE" "$(dirname "$SOCK")"
chmod 0711 "$STATE"

SNAPSHOTTER=overlayfs
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
if ! grep -qw overlay /proc/filesystems; then
  say "no overlay filesystem: using the native snapshotter"
  SNAPSHOTTER=native
fi

# ------------------------------------------------------------------ images
# One busybox-static layer; two OCI image manifests over it; one OCI layout
# in a tar, as `ctr images import` takes it.
IMAGES=$STATE/images.tar
build_images() {
  local work=$STATE/build arch
  arch=$(dpkg --print-architecture)
  rm -rf "$work"
  mkdir -p "$work/rootfs"/{bin,etc,tmp,proc,sys,dev,root} "$work/oci/blobs/sha256"
  chmod 1777 "$work/rootfs/tmp"
  cp /bin/busybox "$work/rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$work/rootfs/bin/$applet"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$work/rootfs/etc/passwd"
  echo 'root:x:0:' >"$work/rootfs/etc/group"
  tar --sort=name --mtime=@0 --numeric-owner --owner=0 --group=0 -C "$work/rootfs" -cf "$work/layer.tar" .
  local diff_id; diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  gzip -n "$work/layer.tar"
  local layer; layer=$(sha256sum "$work/layer.tar.gz" | cut -d' ' -f1)
  local layer_size; layer_size=$(stat -c %s "$work/layer.tar.gz")
  mv "$work/layer.tar.gz" "$work/oci/blobs/sha256/$layer"

  # blob FILE: store under its digest, print "digest size"
  blob() {
    local d s; d=$(sha256sum "$1" | cut -d' ' -f1); s=$(stat -c %s "$1")
    mv "$1" "$work/oci/blobs/sha256/$d"; echo "$d $s"
  }
  local manifests=""
  image() { # NAME ENTRYPOINT CMD
    local cfg man d s md ms
    cfg=$work/config.json
    printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
      "$arch" "$2" "$3" "$diff_id" >"$cfg"
    read -r d s < <(blob "$cfg")
    man=$work/manifest.json
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
      "$d" "$s" "$layer" "$layer_size" >"$man"
    read -r md ms < <(blob "$man")
    manifests="${manifests:+$manifests,}{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$md\",\"size\":$ms,\"annotations\":{\"io.containerd.image.name\":\"$1\",\"org.opencontainers.image.ref.name\":\"${1##*:}\"}}"
  }
  image localhost/real-cri/pause:1 '["/bin/sleep","infinity"]' 'null'
  image localhost/real-cri/busybox:1 'null' '["/bin/sh"]'
  echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$manifests" >"$work/oci/index.json"
  tar --sort=name --mtime=@0 --numeric-owner --owner=0 --group=0 -C "$work/oci" -cf "$IMAGES.tmp" oci-layout index.json blobs
  mv "$IMAGES.tmp" "$IMAGES"
  rm -rf "$work"
}
[ -s "$IMAGES" ] || { say "building images"; build_images; }

# ------------------------------------------------------------------ CNI
mkdir -p "$STATE/cni/conf" "$STATE/cni/ipam"
cat >"$STATE/cni/conf/10-real-cri.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "real-cri-$TAG",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "ipam": { "type": "host-local", "dataDir": "$STATE/cni/ipam", "ranges": [[{ "subnet": "$SUBNET" }]] }
    },
    { "type": "loopback" }
  ]
}
EOF

# ------------------------------------------------------------------ containerd
cat >"$CONFIG" <<EOF
version = 2
root = "$STATE/root"
state = "$STATE/run"

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/real-cri/pause:1"
  disable_apparmor = true
  # root here cannot lower oom_score_adj (no CAP_SYS_RESOURCE): clamp it
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$SNAPSHOTTER"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$STATE/runc"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$STATE/cni/conf"
    max_conf_num = 1
EOF

rm -f "$SOCK" "$SOCK.ttrpc"
started=$(date +%s%N)
setsid containerd --config "$CONFIG" </dev/null >>"$LOG" 2>&1 &
pid=$!
echo "$pid" >"$PIDFILE"
say "containerd pid $pid (log $LOG)"

fail() { say "$*"; tail -n 30 "$LOG" >&2 || true; exit 1; }
for _ in $(seq 300); do
  [ -S "$SOCK" ] && break
  running "$pid" || fail "containerd exited while starting"
  sleep 0.1
done
[ -S "$SOCK" ] || fail "no socket at $SOCK"

ctr --address "$SOCK" --namespace k8s.io images import --snapshotter "$SNAPSHOTTER" "$IMAGES" >/dev/null ||
  fail "image import failed"

# shellcheck disable=SC2086
CTL="$DENO run --frozen --quiet --allow-read --allow-write --allow-env --allow-sys --allow-net $REPO/scripts/real_cri/cri_ctl.ts"
(cd "$REPO" && $CTL "$SOCK" wait-ready "$READY_TIMEOUT") || fail "CRI not ready"
version=$(cd "$REPO" && $CTL "$SOCK" version)
say "$version ready in $(( ($(date +%s%N) - started) / 1000000 )) ms (snapshotter $SNAPSHOTTER, bridge $BRIDGE)"
echo "$pid"
