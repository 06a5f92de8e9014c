# shellcheck shell=bash
# Sourced by scripts/k8s-testbed. Builds the test images from this machine's Debian binaries as
# docker-archive tarballs (manifest.json, a config JSON, one layer), cached in
# $HANGAR_K8S_CACHE/images, for `ctr -n k8s.io images import` and `imagePullPolicy: Never`:
#   hangar-test/redis:<redis version>   redis-server, redis-sentinel, redis-cli, busybox shell+tools
#   hangar-test/valkey:<valkey version> valkey-server, valkey-sentinel, valkey-cli, busybox (when
#                                       Valkey is installed: bookworm-backports' valkey-server, valkey-tools)
#   hangar-test/haproxy:<major.minor>   haproxy, busybox shell+tools
#   hangar-test/pause:3.4               static pause from the kubernetes tree's build/pause

PAUSE_TAG=3.4

redis_tag() { redis-server --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p'; }
valkey_tag() { valkey-server --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p'; }
haproxy_tag() { haproxy -v | sed -n '1s/^HAProxy version \([0-9]*\.[0-9]*\).*/\1/p'; }
REDIS_IMAGE_NAME=hangar-test/redis
VALKEY_IMAGE_NAME=hangar-test/valkey
HAPROXY_IMAGE_NAME=hangar-test/haproxy
PAUSE_IMAGE_NAME=hangar-test/pause

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo none; }

# Copies files (and the libraries ldd lists for them) into a merged-/usr rootfs.
rootfs_init() {
  local r=$1
  rm -rf "$r"
  mkdir -p "$r"/usr/{bin,sbin,lib,lib64} "$r"/{etc,tmp,run,var/tmp,data,proc,sys,dev,root}
  ln -s usr/bin "$r/bin"; ln -s usr/sbin "$r/sbin"; ln -s usr/lib "$r/lib"; ln -s usr/lib64 "$r/lib64"
  chmod 1777 "$r/tmp" "$r/var/tmp"
  cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
redis:x:999:999:redis:/data:/bin/sh
valkey:x:997:997:valkey:/data:/bin/sh
haproxy:x:998:998:haproxy:/var/lib/haproxy:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
  cat >"$r/etc/group" <<'EOF'
root:x:0:
redis:x:999:
valkey:x:997:
haproxy:x:998:
nogroup:x:65534:
EOF
  echo 'hosts: files dns' >"$r/etc/nsswitch.conf"
  : >"$r/etc/hosts"; : >"$r/etc/resolv.conf"
}

rootfs_add() {
  local r=$1; shift
  local f lib
  for f in "$@"; do
    [[ -e $f ]] || die "image build: $f is missing"
    mkdir -p "$r$(dirname "$f")"
    cp -L "$f" "$r$f"
    while read -r lib; do
      [[ -n $lib && -e $lib ]] || continue
      mkdir -p "$r$(dirname "$lib")"
      [[ -e "$r$lib" ]] || cp -L "$lib" "$r$lib"
    done < <(ldd "$f" 2>/dev/null | awk '/=> \// {print $3} /^[ \t]*\/[^ ]+ \(/ {print $1}')
  done
}

rootfs_add_busybox() {
  local r=$1 bb
  bb=$(command -v busybox || true)
  [[ -n $bb ]] || die "busybox is missing"
  rootfs_add "$r" "$bb"
  [[ $bb == /usr/bin/busybox ]] || cp -L "$bb" "$r/usr/bin/busybox"
  local a
  for a in $("$bb" --list); do
    [[ -e "$r/usr/bin/$a" || -L "$r/usr/bin/$a" ]] || ln -s busybox "$r/usr/bin/$a"
  done
}

# docker-archive tarball from a rootfs: $1 rootfs, $2 repo:tag, $3 output, $4 config "config" JSON
image_pack() {
  local r=$1 ref=$2 out=$3 cfg=$4
  local w="$out.work"
  rm -rf "$w"; mkdir -p "$w/layer"
  tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$r" -cf "$w/layer/layer.tar" .
  local diff
  diff=$(sha256sum "$w/layer/layer.tar" | cut -d' ' -f1)
  jq -n --argjson cfg "$cfg" --arg diff "sha256:$diff" '{
      architecture: "amd64", os: "linux", created: "1970-01-01T00:00:00Z", config: $cfg,
      rootfs: {type: "layers", diff_ids: [$diff]},
      history: [{created: "1970-01-01T00:00:00Z", created_by: "hangar scripts/k8s-testbed"}]}' >"$w/config.json"
  local cid
  cid=$(sha256sum "$w/config.json" | cut -d' ' -f1)
  mv "$w/config.json" "$w/$cid.json"
  mv "$w/layer" "$w/$diff"
  jq -n --arg c "$cid.json" --arg ref "$ref" --arg l "$diff/layer.tar" \
    '[{Config: $c, RepoTags: [$ref], Layers: [$l]}]' >"$w/manifest.json"
  tar --numeric-owner --owner=0 --group=0 -C "$w" -cf "$out.tmp" manifest.json "$cid.json" "$diff"
  mv "$out.tmp" "$out"
  rm -rf "$w"
}

# Path of the cached tarball for an image, keyed by the versions of what goes in it and by this file.
image_cache_path() {
  local name=$1 tag=$2 key=$3
  local h
  h=$(printf '%s\n%s\n' "$key" "$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)" | sha256sum | cut -c1-12)
  echo "$HANGAR_K8S_CACHE/images/${name##*/}_${tag}_$h.tar"
}

IMAGE_TARBALLS=()

build_images() {
  local k8sdir=$1 # the cached kubernetes dir (holds pause.c)
  mkdir -p "$HANGAR_K8S_CACHE/images"
  local scratch="$HANGAR_K8S_CACHE/images/.scratch"
  IMAGE_TARBALLS=()
  REDIS_TAG=$(redis_tag); HAPROXY_TAG=$(haproxy_tag)
  [[ -n $REDIS_TAG && -n $HAPROXY_TAG ]] || die "cannot tell the redis/haproxy versions"
  REDIS_IMAGE="$REDIS_IMAGE_NAME:$REDIS_TAG"
  HAPROXY_IMAGE="$HAPROXY_IMAGE_NAME:$HAPROXY_TAG"
  PAUSE_IMAGE="$PAUSE_IMAGE_NAME:$PAUSE_TAG"

  local out t0
  # redis
  out=$(image_cache_path "$REDIS_IMAGE_NAME" "$REDIS_TAG" "redis-server $(pkg_version redis-server) busybox $(pkg_version busybox)")
  if [[ ! -f $out ]]; then
    t0=$SECONDS
    rootfs_init "$scratch"
    rootfs_add "$scratch" "$(command -v redis-server)" "$(command -v redis-cli)"
    local l
    for l in redis-sentinel redis-check-aof redis-check-rdb; do ln -sf redis-server "$scratch/usr/bin/$l"; done
    rootfs_add_busybox "$scratch"
    out_cfg='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      "Cmd":["redis-server","--protected-mode","no"],"WorkingDir":"/data","ExposedPorts":{"6379/tcp":{},"26379/tcp":{}}}'
    image_pack "$scratch" "$REDIS_IMAGE" "$out" "$out_cfg"
    log "image $REDIS_IMAGE built ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
  fi
  IMAGE_TARBALLS+=("$out")

  # valkey: built when Valkey is installed (CI installs it before `up`; `build` may run before that)
  VALKEY_IMAGE=""
  if command -v valkey-server >/dev/null 2>&1 && command -v valkey-cli >/dev/null 2>&1; then
    VALKEY_TAG=$(valkey_tag)
    [[ -n $VALKEY_TAG ]] || die "cannot tell the valkey version"
    VALKEY_IMAGE="$VALKEY_IMAGE_NAME:$VALKEY_TAG"
    out=$(image_cache_path "$VALKEY_IMAGE_NAME" "$VALKEY_TAG" "valkey-server $(pkg_version valkey-server) valkey-tools $(pkg_version valkey-tools) busybox $(pkg_version busybox)")
    if [[ ! -f $out ]]; then
      t0=$SECONDS
      rootfs_init "$scratch"
      rootfs_add "$scratch" "$(command -v valkey-server)" "$(command -v valkey-cli)"
      local v
      for v in valkey-sentinel valkey-check-aof valkey-check-rdb; do ln -sf valkey-server "$scratch/usr/bin/$v"; done
      rootfs_add_busybox "$scratch"
      out_cfg='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        "Cmd":["valkey-server","--protected-mode","no"],"WorkingDir":"/data","ExposedPorts":{"6379/tcp":{},"26379/tcp":{}}}'
      image_pack "$scratch" "$VALKEY_IMAGE" "$out" "$out_cfg"
      log "image $VALKEY_IMAGE built ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
    fi
    IMAGE_TARBALLS+=("$out")
  else
    log "no valkey-server here: no Valkey image (install valkey-server and valkey-tools, from bookworm-backports on Debian 12)"
  fi

  # haproxy
  out=$(image_cache_path "$HAPROXY_IMAGE_NAME" "$HAPROXY_TAG" "haproxy $(pkg_version haproxy) busybox $(pkg_version busybox)")
  if [[ ! -f $out ]]; then
    t0=$SECONDS
    rootfs_init "$scratch"
    rootfs_add "$scratch" "$(command -v haproxy)"
    mkdir -p "$scratch/var/lib/haproxy" "$scratch/usr/local/etc/haproxy" "$scratch/etc/haproxy"
    rootfs_add_busybox "$scratch"
    out_cfg='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      "Cmd":["haproxy","-W","-db","-f","/usr/local/etc/haproxy/haproxy.cfg"],"WorkingDir":"/var/lib/haproxy","StopSignal":"SIGUSR1"}'
    image_pack "$scratch" "$HAPROXY_IMAGE" "$out" "$out_cfg"
    log "image $HAPROXY_IMAGE built ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
  fi
  IMAGE_TARBALLS+=("$out")

  # pause: static, from the kubernetes tree's own C source
  out=$(image_cache_path "$PAUSE_IMAGE_NAME" "$PAUSE_TAG" "pause $(sha256sum "$k8sdir/pause.c" | cut -d' ' -f1) gcc $(pkg_version gcc)")
  if [[ ! -f $out ]]; then
    t0=$SECONDS
    ensure_packages gcc libc6-dev
    rootfs_init "$scratch"
    rm -rf "$scratch"/{data,root,etc/passwd,etc/group,etc/nsswitch.conf,etc/hosts,etc/resolv.conf}
    gcc -Os -static -Wall -Werror -DVERSION="v$PAUSE_TAG-hangar" -o "$scratch/pause" "$k8sdir/pause.c"
    strip "$scratch/pause"
    image_pack "$scratch" "$PAUSE_IMAGE" "$out" '{"Entrypoint":["/pause"],"Env":["PATH=/"]}'
    log "image $PAUSE_IMAGE built ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
  fi
  IMAGE_TARBALLS+=("$out")
  rm -rf "$scratch"
  # Tarballs of older versions (or of an older version of this file) go.
  local t keep
  for t in "$HANGAR_K8S_CACHE"/images/*.tar; do
    [[ -e $t ]] || continue
    keep=0
    for out in "${IMAGE_TARBALLS[@]}"; do [[ $t == "$out" ]] && keep=1; done
    [[ $keep == 1 ]] || rm -f "$t"
  done
}
