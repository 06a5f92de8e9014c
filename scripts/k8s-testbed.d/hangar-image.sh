# shellcheck shell=bash
# Sourced by scripts/k8s-testbed: `hangar-image [TAG]`. hangar's own image, built as the engine
# images are (build-images.sh): a docker-archive tarball of one layer, from this repository's build
# (`npm run build`: dist/, and the production packages of node_modules that `npm ls --omit=dev`
# lists) and this machine's Node.js (Debian's nodejs package), with openssl (hangar makes the
# instances' certificates with it) and busybox. Imported into every node of a running testbed, for
# `kubectl apply -k deploy/` with `imagePullPolicy: Never` (test/kubernetes/hangar-in-cluster.test.ts).
#
#   hangar-test/hangar:TAG    default TAG: the package's version and 12 hex digits of the build's hash

HANGAR_IMAGE_NAME=hangar-test/hangar
# An unprivileged user of its own, as the Dockerfile's `USER node`.
HANGAR_IMAGE_UID=10001

cmd_hangar_image() {
  local tag=${1:-} repo=$SCRIPT_DIR/..
  repo=$(cd "$repo" && pwd)
  [[ -f $repo/dist/src/cli/bin.js ]] || die "no build of hangar in $repo/dist: run npm run build first"
  command -v node >/dev/null || die "no node on this machine"
  local version hash
  version=$(jq -r .version "$repo/package.json")
  hash=$( (cd "$repo" && find dist package.json package-lock.json -type f -print0 | sort -z | xargs -0 sha256sum; sha256sum "${BASH_SOURCE[0]}") | sha256sum | cut -c1-12)
  tag=${tag:-$version-$hash}
  [[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "image tag $tag: letters, digits, '_', '.', '-'"
  local ref="$HANGAR_IMAGE_NAME:$tag" dir="$HANGAR_K8S_CACHE/hangar-images"
  local out="$dir/hangar_$tag.tar" t0=$SECONDS
  mkdir -p "$dir"
  if [[ ! -f $out ]]; then
    local scratch="$dir/.scratch"
    rootfs_init "$scratch"
    echo "hangar:x:$HANGAR_IMAGE_UID:$HANGAR_IMAGE_UID:hangar:/hangar:/bin/sh" >>"$scratch/etc/passwd"
    echo "hangar:x:$HANGAR_IMAGE_UID:" >>"$scratch/etc/group"
    rootfs_add "$scratch" "$(readlink -f "$(command -v node)")" "$(command -v openssl)"
    [[ -e $scratch/usr/bin/node ]] || ln -s "$(readlink -f "$(command -v node)")" "$scratch/usr/bin/node"
    mkdir -p "$scratch/etc/ssl" "$scratch/usr/lib/ssl"
    cp /etc/ssl/openssl.cnf "$scratch/etc/ssl/openssl.cnf"
    ln -sf /etc/ssl/openssl.cnf "$scratch/usr/lib/ssl/openssl.cnf"
    rootfs_add_busybox "$scratch"
    mkdir -p "$scratch/hangar/node_modules"
    cp -a "$repo/dist" "$repo/package.json" "$scratch/hangar/"
    # the production packages only, where npm put them
    local p rel
    while read -r p; do
      rel=${p#"$repo/node_modules/"}
      [[ $rel != "$p" ]] || continue
      mkdir -p "$scratch/hangar/node_modules/$(dirname "$rel")"
      [[ -e $scratch/hangar/node_modules/$rel ]] || cp -a "$p" "$scratch/hangar/node_modules/$rel"
    done < <(cd "$repo" && npm ls --omit=dev --all --parseable 2>/dev/null | tail -n +2)
    # a directory the unprivileged user may write, where hangar makes its data dir (mode 0700)
    mkdir -p "$scratch/var/lib/hangar"
    chmod 1777 "$scratch/var/lib/hangar"
    local cfg
    cfg=$(jq -n --arg uid "$HANGAR_IMAGE_UID" '{
      Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HANGAR_DATA_DIR=/var/lib/hangar/data", "NODE_ENV=production"],
      Entrypoint: ["node", "/hangar/dist/src/cli/bin.js"], Cmd: ["serve"], WorkingDir: "/hangar", User: $uid,
      ExposedPorts: {"8080/tcp": {}}}')
    image_pack "$scratch" "$ref" "$out" "$cfg"
    rm -rf "$scratch"
    log "image $ref built ($(du -h "$out" | cut -f1), $((SECONDS - t0)) s)"
  fi
  # into every node of a running testbed
  if daemon_pid containerd >/dev/null; then
    ctr_ images import "$out" >>"$LOGS/ctr-import.log" 2>&1 || die "ctr images import $out failed (log: $LOGS/ctr-import.log)"
    local k
    for ((k = 2; k <= $(nodes_recorded); k++)); do
      node_vars "$k"
      daemon_pid "$N.containerd" >/dev/null || continue
      ctr --address "$N_SOCK" --namespace k8s.io images import "$out" >>"$LOGS/$N.ctr-import.log" 2>&1 \
        || die "ctr images import $out into node $N_NAME failed"
    done
    log "image $ref in every node ($((SECONDS - t0)) s)"
  fi
  echo "$ref"
}
