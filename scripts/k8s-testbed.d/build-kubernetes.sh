# shellcheck shell=bash
# Sourced by scripts/k8s-testbed. Builds kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet and kube-proxy from Debian's `kubernetes` source package, once, into
# $HANGAR_K8S_CACHE/kubernetes-<debian version>/bin, and takes kubectl of the same version from
# Debian's kubernetes-client .deb (unpacked, not installed: the machine's own kubectl stays).

K8S_BUILD_TARGETS="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kube-proxy"
K8S_BUILD_DEPS="golang-go jq rsync make gcc libc6-dev dpkg-dev golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev"

# The Debian version of the kubernetes source: the one already cached if there is exactly one,
# else the candidate of kubernetes-client (built from the same source). HANGAR_K8S_DEB_VERSION wins.
k8s_deb_version() {
  if [[ -n "${HANGAR_K8S_DEB_VERSION:-}" ]]; then echo "$HANGAR_K8S_DEB_VERSION"; return; fi
  local cached=()
  local d
  for d in "$HANGAR_K8S_CACHE"/kubernetes-*/bin/.complete; do [[ -e $d ]] && cached+=("$d"); done
  if [[ ${#cached[@]} -eq 1 ]]; then
    d=${cached[0]%/bin/.complete}; echo "${d##*/kubernetes-}"; return
  fi
  local v
  v=$(apt-cache policy kubernetes-client 2>/dev/null | awk '/Candidate:/ {print $2}')
  if [[ -z "$v" || "$v" == "(none)" ]]; then
    apt_update_once
    v=$(apt-cache policy kubernetes-client 2>/dev/null | awk '/Candidate:/ {print $2}')
  fi
  [[ -n "$v" && "$v" != "(none)" ]] || die "no kubernetes-client candidate in apt: cannot tell which kubernetes source to build"
  echo "$v"
}

# 1.20.5+really1.20.2-1.1+deb12u1 -> 1.20.2
k8s_upstream_version() {
  local v=${1#*:}
  [[ $v == *really* ]] && v=${v##*really}
  v=${v%%-*}; v=${v%%+*}
  echo "$v"
}

# A private apt configuration that has deb-src lines for the machine's Debian sources, so that
# `apt-get source` works without touching /etc/apt or the system's package lists.
k8s_private_apt() {
  local d=$1
  mkdir -p "$d/sources.list.d" "$d/lists/partial" "$d/cache/archives/partial"
  : >"$d/sources.list"
  if [[ -n "${HANGAR_K8S_DEB_SRC:-}" ]]; then
    echo "$HANGAR_K8S_DEB_SRC" >"$d/sources.list"
  else
    if [[ -f /etc/apt/sources.list ]]; then
      awk '$1 == "deb" && /debian/ { $1 = "deb-src"; print }' /etc/apt/sources.list >>"$d/sources.list"
    fi
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      # deb822 stanzas: keep the Debian ones, turned into deb-src.
      awk -v RS= -v ORS='\n\n' '
        /(^|\n)URIs:[^\n]*debian/ && /(^|\n)Types:[^\n]*deb/ && !/(^|\n)Enabled: *no/ {
          gsub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' "$f" \
        >"$d/sources.list.d/${f##*/}"
    done
    for f in /etc/apt/sources.list.d/*.list; do
      [[ -f $f ]] || continue
      awk '$1 == "deb" && /debian/ { $1 = "deb-src"; print }' "$f" >"$d/sources.list.d/${f##*/}"
    done
  fi
  APT_PRIVATE=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/sources.list.d"
    -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o "APT::Sandbox::User=root")
}

build_kubernetes() {
  local debver=$1
  local out="$HANGAR_K8S_CACHE/kubernetes-$debver"
  local upstream
  upstream=$(k8s_upstream_version "$debver")
  if [[ -f "$out/bin/.complete" ]]; then
    log "kubernetes $upstream binaries cached in $out/bin"
    return 0
  fi
  local t0=$SECONDS
  log "building kubernetes $upstream from Debian's source package $debver (once; about 10 minutes on 2 cores)"
  # shellcheck disable=SC2086 # a list of package names
  ensure_packages $K8S_BUILD_DEPS
  local work="$HANGAR_K8S_CACHE/build/kubernetes-$debver"
  rm -rf "$work"
  mkdir -p "$work/src"
  k8s_private_apt "$work/apt"
  log "fetching the source package (private apt config in $work/apt)"
  apt-get -q "${APT_PRIVATE[@]}" update >"$work/apt-update.log" 2>&1 \
    || { tail -20 "$work/apt-update.log" >&2; die "apt-get update (deb-src) failed"; }
  (cd "$work/src" && apt-get -q "${APT_PRIVATE[@]}" source "kubernetes=$debver") >"$work/apt-source.log" 2>&1 \
    || { tail -20 "$work/apt-source.log" >&2; die "apt-get source kubernetes=$debver failed"; }
  local tree
  tree=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -1)
  [[ -n "$tree" && -f "$tree/Makefile" ]] || die "no kubernetes tree unpacked in $work/src"

  # kube-apiserver 1.20 built with Go >= 1.18 segfaults on the first custom-resource create
  # (reflect2 1.0.1 relies on runtime internals that changed). Debian's packaged reflect2 1.0.2
  # and json-iterator 1.1.12 sources fix it.
  local gocode=/usr/share/gocode/src/github.com
  [[ -d $gocode/modern-go/reflect2 && -d $gocode/json-iterator/go ]] \
    || die "Debian's reflect2/json-iterator sources are missing under $gocode"
  rm -rf "$tree/vendor/github.com/modern-go/reflect2" "$tree/vendor/github.com/json-iterator/go"
  cp -a "$gocode/modern-go/reflect2" "$tree/vendor/github.com/modern-go/reflect2"
  cp -a "$gocode/json-iterator/go" "$tree/vendor/github.com/json-iterator/go"
  find "$tree/vendor/github.com/modern-go/reflect2" "$tree/vendor/github.com/json-iterator/go" \
    -name '*_test.go' -delete

  log "compiling $K8S_BUILD_TARGETS (log: $work/make.log)"
  (
    cd "$tree"
    export GOCACHE="$work/gocache" GOPATH="$work/gopath" GOFLAGS=-mod=vendor GOPROXY=off GO111MODULE=on
    export KUBE_GIT_VERSION="v$upstream" KUBE_GIT_TREE_STATE=clean KUBE_GIT_COMMIT="debian-$debver"
    export KUBE_BUILD_PLATFORMS=linux/amd64
    make WHAT="$K8S_BUILD_TARGETS" KUBE_VERBOSE=1
  ) >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; die "kubernetes build failed (see $work/make.log)"; }

  local built
  built=$(find "$tree/_output" -type d -path '*/bin' -exec test -x '{}/kube-apiserver' ';' -print | head -1)
  [[ -n "$built" ]] || die "the build left no kube-apiserver under $tree/_output"

  rm -rf "$out.tmp"
  mkdir -p "$out.tmp/bin"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    install -m 0755 "$built/$b" "$out.tmp/bin/$b"
  done
  # The pause program of the same tree, for the sandbox image.
  install -m 0644 "$tree/build/pause/linux/pause.c" "$out.tmp/pause.c"
  # kubectl of the same version: Debian's own binary, unpacked from its .deb.
  (cd "$work" && apt-get -q download "kubernetes-client=$debver") >"$work/apt-download.log" 2>&1 \
    || { tail -20 "$work/apt-download.log" >&2; die "apt-get download kubernetes-client=$debver failed"; }
  dpkg-deb -x "$work"/kubernetes-client_*.deb "$work/kubectl-deb"
  install -m 0755 "$work/kubectl-deb/usr/bin/kubectl" "$out.tmp/bin/kubectl"
  echo "$debver" >"$out.tmp/bin/.complete"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  if [[ "${HANGAR_K8S_KEEP_BUILD:-0}" != 1 ]]; then
    # The tree and Go cache take ~3.5 GB; the binaries are all that is needed.
    rm -rf "$work"
    rmdir "$HANGAR_K8S_CACHE/build" 2>/dev/null || true
  fi
  log "kubernetes $upstream built in $((SECONDS - t0)) s, cached in $out/bin"
}
