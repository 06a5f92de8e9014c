# shellcheck shell=bash
# shellcheck disable=SC2016 # bash -c scripts take their arguments as $0, $1
# Sourced by scripts/k8s-testbed: build, up, down, status.

cmd_build() {
  mkdir -p "$HANGAR_K8S_CACHE"
  APT_LOG="$HANGAR_K8S_CACHE/apt-install.log"
  ensure_runtime_packages
  K8S_DEB_VERSION=$(k8s_deb_version)
  build_kubernetes "$K8S_DEB_VERSION"
  K8S_DIR="$HANGAR_K8S_CACHE/kubernetes-$K8S_DEB_VERSION"
  BIN="$K8S_DIR/bin"
  build_images "$K8S_DIR"
}

# --- processes -----------------------------------------------------------------------------

# The program a daemon of that name runs: `kubelet`; `node2.kubelet` (node 2's) too; a node's
# `.holder` (of its namespaces) is a `sleep`.
exe_of() {
  case $1 in
    *.holder) echo sleep ;;
    *.*) echo "${1#*.}" ;;
    *) echo "$1" ;;
  esac
}

# The PID in $PIDS/<name>.pid if that process is alive and is the program of that name.
daemon_pid() {
  local name=$1 f="$PIDS/$1.pid" pid exe want
  want=${2:-$(exe_of "$1")}
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [[ ${exe##*/} == "$want" || ${exe##*/} == "$want (deleted)" ]] || return 1
  echo "$pid"
}

# Alive and not a zombie waiting to be reaped.
pid_running() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}

start_daemon() {
  local name=$1; shift
  mkdir -p "$PIDS" "$LOGS"
  if daemon_pid "$name" >/dev/null; then die "$name is already running"; fi
  log "starting $name"
  # fd 9 is the lock of this script: the daemons must not keep it.
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 9>&- &
  local pid=$! exe i want
  want=$(exe_of "$name")
  echo "$pid" >"$PIDS/$name.pid"
  # Until the forked shell has exec'd setsid and setsid the program (through nsenter, for a node's
  # daemons), /proc/<pid>/exe names bash or setsid, and daemon_pid would take the daemon for
  # exited (an empty log, on a busy machine): wait for the exec, or for the process to end.
  for ((i = 0; i < 200; i++)); do
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || break
    [[ ${exe##*/} == "$want" || ${exe##*/} == "$want (deleted)" ]] && break
    sleep 0.05
  done
}

stop_daemon() {
  local name=$1 pid i
  if pid=$(daemon_pid "$name"); then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do pid_running "$pid" || break; sleep 0.1; done
    if pid_running "$pid"; then log "$name did not stop in 20 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; sleep 0.5; fi
  fi
  rm -f "$PIDS/$name.pid"
}

# wait_for <seconds> <what> <command...>: retries the command until it succeeds.
wait_for() {
  local timeout=$1 what=$2; shift 2
  local end=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= end)); then log "timed out after ${timeout}s waiting for $what"; return 1; fi
    sleep 0.5
  done
}

# Fails with the component's log tail when it died or never got ready.
wait_ready() {
  local timeout=$1 name=$2; shift 2
  local end=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! daemon_pid "$name" >/dev/null; then
      tail -30 "$LOGS/$name.log" >&2 || true; die "$name exited (log: $LOGS/$name.log)"
    fi
    if ((SECONDS >= end)); then
      tail -30 "$LOGS/$name.log" >&2 || true; die "$name not ready after ${timeout}s (log: $LOGS/$name.log)"
    fi
    sleep 0.3
  done
}

admin_token() { awk -F, '$2 == "admin" {print $1}' "$PKI/tokens.csv"; }
api_get() { curl -fsS --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(admin_token)" "https://$NODE_IP:$API_PORT$1"; }
kc() { "$BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }
ctr_() { ctr --address "$CTRD_SOCK" --namespace k8s.io "$@"; }

node_ready() {
  [[ $(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

# BIN from the run dir (so that down and status work without apt), else from the cache.
load_bin() {
  if [[ -f "$RUN/k8s-dir" ]]; then K8S_DIR=$(<"$RUN/k8s-dir"); BIN="$K8S_DIR/bin"; return 0; fi
  local d
  for d in "$HANGAR_K8S_CACHE"/kubernetes-*/bin; do
    [[ -f $d/.complete ]] && { BIN=$d; K8S_DIR=${d%/bin}; return 0; }
  done
  BIN=""
  return 1
}

# Directories outside the run dir that kubelet (device plugins, pod logs), containerd (shim
# sockets), CNI (result cache, netns mounts) and controller-manager (flex volumes) create at fixed
# paths in 1.20. Removed on down unless they existed before up.
HOST_DIRS="/var/log/pods /var/log/containers /var/lib/cni /var/lib/kubelet /run/containerd /usr/libexec/kubernetes"

# --- pieces of up ---------------------------------------------------------------------------

save_host_state() {
  local f="$RUN/host-state"
  [[ -f $f ]] && return 0 # an earlier, unfinished up saved the originals already
  local s p
  : >"$f.tmp"
  for s in $SAVED_SYSCTLS; do
    p=/proc/sys/${s//./\/}
    [[ -f $p ]] && echo "sysctl $s $(<"$p")" >>"$f.tmp"
  done
  for p in $HOST_DIRS /run/netns; do
    [[ -e $p ]] && echo "existed $p" >>"$f.tmp"
  done
  if [[ -d /run/netns ]]; then
    for p in /run/netns/*; do [[ -e $p ]] && echo "netns $p" >>"$f.tmp"; done
  fi
  mv "$f.tmp" "$f"
}

set_sysctl() { local p=/proc/sys/${1//./\/}; [[ -f $p ]] && echo "$2" >"$p"; }

setup_network() {
  set_sysctl net.ipv4.ip_forward 1
  set_sysctl net.bridge.bridge-nf-call-iptables 1 || true
  set_sysctl net.bridge.bridge-nf-call-ip6tables 1 || true
  if ! ip link show "$NODE_DEV" >/dev/null 2>&1; then
    # A dummy device when the kernel has the module; else a bridge with no ports, which holds
    # an address the same way.
    ip link add "$NODE_DEV" type dummy 2>/dev/null || ip link add "$NODE_DEV" type bridge
  fi
  ip addr replace "$NODE_IP/32" dev "$NODE_DEV"
  ip link set "$NODE_DEV" up
}

make_pki() {
  mkdir -p "$PKI"; chmod 700 "$PKI"
  (
    cd "$PKI" || exit 1
    openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 -keyout ca.key -out ca.crt \
      -subj "/CN=hangar-k8s-testbed-ca" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    sign() { # name subject usage san
      local ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$3"
      [[ -n ${4:-} ]] && ext+=$'\n'"subjectAltName=$4"
      openssl req -new -nodes -newkey rsa:2048 -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      openssl x509 -req -sha256 -days 3650 -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
        -out "$1.crt" -extfile <(echo "$ext") 2>/dev/null
      rm -f "$1.csr"
    }
    sign apiserver "/CN=kube-apiserver" serverAuth \
      "IP:$NODE_IP,IP:$SERVICE_API_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
    sign kubelet "/CN=system:node:$NODE_NAME/O=system:nodes" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
    local k
    for ((k = 2; k <= NODES; k++)); do
      node_vars "$k"
      sign "kubelet-$N_NAME" "/CN=system:node:$N_NAME/O=system:nodes" serverAuth "IP:$N_IP,DNS:$N_NAME"
    done
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # Static tokens: admin (system:masters), hangar (no group: no permissions until a test binds
    # a Role to it), and one per component.
    tok() { openssl rand -hex 24; }
    {
      echo "$(tok),admin,admin,\"system:masters\""
      echo "$(tok),hangar,hangar"
      echo "$(tok),system:node:$NODE_NAME,kubelet,\"system:nodes\""
      for ((k = 2; k <= NODES; k++)); do
        node_vars "$k"
        echo "$(tok),system:node:$N_NAME,kubelet-$k,\"system:nodes\""
      done
      echo "$(tok),system:kube-proxy,kube-proxy"
      echo "$(tok),system:kube-controller-manager,kube-controller-manager"
      echo "$(tok),system:kube-scheduler,kube-scheduler"
    } >tokens.csv
    chmod 600 ./*.key tokens.csv
  )
}

token_of() { awk -F, -v u="$1" '$2 == u {print $1}' "$PKI/tokens.csv"; }

write_kubeconfig() { # file user
  local file=$1 user=$2
  cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: hangar-testbed
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $user
  user:
    token: $(token_of "$user")
contexts:
- name: $user@hangar-testbed
  context:
    cluster: hangar-testbed
    user: $user
    namespace: default
current-context: $user@hangar-testbed
EOF
  chmod 600 "$file.tmp"
  mv "$file.tmp" "$file"
}

start_etcd() {
  mkdir -p "$RUN/etcd"; chmod 700 "$RUN/etcd"
  start_daemon etcd /usr/bin/etcd --name "$NODE_NAME" --data-dir "$RUN/etcd" --logger zap \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new
  wait_ready 60 etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

write_cni_config() {
  mkdir -p "$RUN/cni/net.d" "$RUN/cni/ipam"
  # No ipMasq: pods reach this machine (node IP, services, other pods) but nothing beyond it.
  cat >"$RUN/cni/net.d/10-hangar-testbed.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "hangar-testbed",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$RUN/cni/ipam",
        "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$POD_GATEWAY" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

# containerd's configuration: $1 its directory (root, state, runc, opt), $2 its socket, $3 CNI's conf dir.
containerd_config() {
  local dir=$1 sock=$2 cni=$3
  cat <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/$PAUSE_IMAGE"
  # root here lacks CAP_SYS_RESOURCE: without this, runc fails writing oom_score_adj.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$dir/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni"
EOF
}

start_containerd() {
  mkdir -p "$RUN/containerd"/{root,state,runc,opt}
  containerd_config "$RUN/containerd" "$CTRD_SOCK" "$RUN/cni/net.d" >"$RUN/containerd/config.toml"
  start_daemon containerd /usr/bin/containerd --config "$RUN/containerd/config.toml"
  wait_ready 60 containerd ctr --address "$CTRD_SOCK" version
}

import_images() {
  local t
  for t in "${IMAGE_TARBALLS[@]}"; do
    ctr_ images import "$t" >>"$LOGS/ctr-import.log" 2>&1 || { tail -5 "$LOGS/ctr-import.log" >&2; die "ctr images import $t failed"; }
  done
  log "imported $REDIS_IMAGE, ${VALKEY_IMAGE:+$VALKEY_IMAGE, }$HAPROXY_IMAGE, $PAUSE_IMAGE into containerd (namespace k8s.io)"
}

start_apiserver() {
  start_daemon kube-apiserver "$BIN/kube-apiserver" \
    --advertise-address="$NODE_IP" --bind-address="$NODE_IP" --secure-port="$API_PORT" --insecure-port=0 \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --service-cluster-ip-range="$SERVICE_CIDR" --service-node-port-range="$NODEPORT_RANGE" \
    --authorization-mode=Node,RBAC --token-auth-file="$PKI/tokens.csv" --client-ca-file="$PKI/ca.crt" \
    --enable-admission-plugins=NodeRestriction --allow-privileged=true \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --profiling=false --v=1
  wait_ready 120 kube-apiserver api_get /readyz
}

start_controller_manager() {
  write_kubeconfig "$RUN/kubeconfigs/kube-controller-manager.kubeconfig" system:kube-controller-manager
  local kcfg="$RUN/kubeconfigs/kube-controller-manager.kubeconfig"
  start_daemon kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$kcfg" --authentication-kubeconfig="$kcfg" --authorization-kubeconfig="$kcfg" \
    --bind-address=127.0.0.1 --secure-port="$CM_PORT" --port=0 --leader-elect=false \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --use-service-account-credentials=true --service-cluster-ip-range="$SERVICE_CIDR" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --flex-volume-plugin-dir="$RUN/kubelet/volume-plugins" --profiling=false --v=1
}

start_scheduler() {
  write_kubeconfig "$RUN/kubeconfigs/kube-scheduler.kubeconfig" system:kube-scheduler
  local kcfg="$RUN/kubeconfigs/kube-scheduler.kubeconfig"
  start_daemon kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$kcfg" --authentication-kubeconfig="$kcfg" --authorization-kubeconfig="$kcfg" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --port=0 --leader-elect=false \
    --profiling=false --v=1
}

# A kubelet's configuration: $1 its address, $2 its serving certificate and key (without .crt,
# .key), $3 its volume plugin dir, $4 its cgroup root (none: the machine's).
kubelet_config() {
  cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $2.crt
tlsPrivateKeyFile: $2.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
failSwapOn: false
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
volumePluginDir: $3
# Nothing cleaned away under disk pressure on a busy test machine.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
serializeImagePulls: false
EOF
  [[ -z ${4:-} ]] || echo "cgroupRoot: $4"
}

start_kubelet() {
  write_kubeconfig "$RUN/kubeconfigs/kubelet.kubeconfig" "system:node:$NODE_NAME"
  mkdir -p "$RUN/kubelet"
  kubelet_config "$NODE_IP" "$PKI/kubelet" "$RUN/kubelet/volume-plugins" >"$RUN/kubelet-config.yaml"
  start_daemon kubelet "$BIN/kubelet" \
    --config="$RUN/kubelet-config.yaml" --kubeconfig="$RUN/kubeconfigs/kubelet.kubeconfig" \
    --root-dir="$RUN/kubelet" --cert-dir="$RUN/kubelet/pki" \
    --container-runtime=remote --container-runtime-endpoint="unix://$CTRD_SOCK" \
    --runtime-request-timeout=2m --pod-infra-container-image="docker.io/$PAUSE_IMAGE" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
  wait_ready 60 kubelet curl -fsS "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
}

start_kube_proxy() {
  write_kubeconfig "$RUN/kubeconfigs/kube-proxy.kubeconfig" system:kube-proxy
  # conntrack settings 0: leave the host's conntrack sysctls alone. NodePorts on the node IP only.
  start_daemon kube-proxy "$BIN/kube-proxy" \
    --kubeconfig="$RUN/kubeconfigs/kube-proxy.kubeconfig" --proxy-mode=iptables \
    --hostname-override="$NODE_NAME" --bind-address="$NODE_IP" --cluster-cidr="$CLUSTER_CIDR" \
    --nodeport-addresses="$NODE_IP/32" \
    --healthz-bind-address="127.0.0.1:$PROXY_HEALTHZ_PORT" --metrics-bind-address="127.0.0.1:$PROXY_METRICS_PORT" \
    --conntrack-max-per-core=0 --conntrack-min=0 \
    --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0 --v=1
  wait_ready 60 kube-proxy curl -fsS "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz"
}

write_env_file() {
  local f="$RUN/testbed.env"
  cat >"$f.tmp" <<EOF
# scripts/k8s-testbed: a running single-node Kubernetes for hangar's end-to-end tests.
# KEY=value lines, no quoting needed: source it from a shell or parse it.
HANGAR_K8S_RUN=$RUN
HANGAR_K8S_VERSION=v$(k8s_upstream_version "$(cat "$BIN/.complete")")
HANGAR_K8S_API_SERVER=https://$NODE_IP:$API_PORT
HANGAR_K8S_CA_FILE=$PKI/ca.crt
HANGAR_K8S_ADMIN_KUBECONFIG=$RUN/admin.kubeconfig
HANGAR_K8S_HANGAR_KUBECONFIG=$RUN/hangar.kubeconfig
HANGAR_K8S_ADMIN_TOKEN=$(token_of admin)
HANGAR_K8S_HANGAR_TOKEN=$(token_of hangar)
HANGAR_K8S_HANGAR_USER=hangar
HANGAR_K8S_KUBECTL=$BIN/kubectl
HANGAR_K8S_NODE_NAME=$NODE_NAME
HANGAR_K8S_NODE_IP=$NODE_IP
HANGAR_K8S_NODES=$NODES
HANGAR_K8S_NODE_NAMES=$(node_names)
HANGAR_K8S_NODE_IPS=$(node_ips)
HANGAR_K8S_POD_CIDR=$POD_CIDR
HANGAR_K8S_CLUSTER_CIDR=$CLUSTER_CIDR
HANGAR_K8S_SERVICE_CIDR=$SERVICE_CIDR
HANGAR_K8S_NODEPORT_RANGE=$NODEPORT_RANGE
HANGAR_K8S_REDIS_IMAGE=$REDIS_IMAGE
HANGAR_K8S_VALKEY_IMAGE=$VALKEY_IMAGE
HANGAR_K8S_HAPROXY_IMAGE=$HAPROXY_IMAGE
HANGAR_K8S_PAUSE_IMAGE=$PAUSE_IMAGE
HANGAR_K8S_IMAGE_PULL_POLICY=Never
EOF
  chmod 600 "$f.tmp"
  mv "$f.tmp" "$f"
}

# All components alive (those of every node too).
all_alive() {
  local c
  for c in $COMPONENTS_UP $(all_node_components); do daemon_pid "$c" >/dev/null || return 1; done
  return 0
}

any_alive() {
  local c
  for c in $COMPONENTS_UP $(all_node_components); do daemon_pid "$c" >/dev/null && return 0; done
  return 1
}

# Every node Ready.
nodes_ready() {
  node_ready || return 1
  local k
  for ((k = 2; k <= $(nodes_recorded); k++)); do node_vars "$k"; node_ready_named "$N_NAME" || return 1; done
}

# The nodes' names and addresses, comma-separated, node 1 first.
node_names() {
  local k out=$NODE_NAME
  for ((k = 2; k <= NODES; k++)); do node_vars "$k"; out+=",$N_NAME"; done
  echo "$out"
}
node_ips() {
  local k out=$NODE_IP
  for ((k = 2; k <= NODES; k++)); do node_vars "$k"; out+=",$N_IP"; done
  echo "$out"
}

cmd_up() {
  local t0=$SECONDS
  if [[ -f "$RUN/testbed.env" ]] && [[ $(nodes_recorded) == "$NODES" ]] && all_alive && load_bin && nodes_ready; then
    log "already up: $NODES node(s) Ready, API https://$NODE_IP:$API_PORT, env file $RUN/testbed.env"
    return 0
  fi
  if any_alive || [[ -f "$RUN/host-state" ]]; then
    if [[ -f "$RUN/testbed.env" && $(nodes_recorded) != "$NODES" ]]; then
      log "a testbed of $(nodes_recorded) node(s) is up: taking it down first for $NODES"
    else
      log "a testbed is partly up or was not torn down: taking it down first"
    fi
    cmd_down
  fi
  cmd_build
  log "binaries and images ready ($((SECONDS - t0)) s); starting the cluster in $RUN"
  trap up_failed EXIT

  mkdir -p "$RUN"
  chmod 700 "$RUN"
  rm -rf "$LOGS"
  mkdir -p "$LOGS" "$PIDS" "$RUN/kubeconfigs"
  echo "$K8S_DIR" >"$RUN/k8s-dir"
  echo "$NODES" >"$RUN/node-count"
  save_host_state
  setup_network
  # Several nodes route pods' traffic through this machine: keep it to the testbed's own ranges.
  if ((NODES > 1)); then
    setup_traffic_guard
    setup_pod_bridge
  fi
  make_pki
  write_kubeconfig "$RUN/admin.kubeconfig" admin
  write_kubeconfig "$RUN/hangar.kubeconfig" hangar

  start_etcd
  write_cni_config
  start_containerd
  import_images
  start_apiserver
  start_controller_manager
  start_scheduler
  start_kubelet
  start_kube_proxy
  local k
  for ((k = 2; k <= NODES; k++)); do start_node "$k"; done

  log "waiting for node $NODE_NAME to be Ready"
  wait_for 120 "node Ready" node_ready || { tail -20 "$LOGS/kubelet.log" >&2; die "node not Ready (log: $LOGS/kubelet.log)"; }
  for ((k = 2; k <= NODES; k++)); do
    node_vars "$k"
    wait_for 120 "node $N_NAME Ready" node_ready_named "$N_NAME" \
      || { tail -20 "$LOGS/$N.kubelet.log" >&2; die "node $N_NAME not Ready (log: $LOGS/$N.kubelet.log)"; }
  done
  log "waiting for the default ServiceAccount and its token"
  wait_for 60 "default ServiceAccount token" \
    bash -c '[[ -n $("$0" --kubeconfig "$1" -n default get serviceaccount default -o jsonpath="{.secrets[0].name}") ]]' \
    "$BIN/kubectl" "$RUN/admin.kubeconfig" \
    || { tail -20 "$LOGS/kube-controller-manager.log" >&2; die "no default ServiceAccount token"; }
  all_alive || die "a component exited during start-up (logs in $LOGS)"
  write_env_file
  trap - EXIT
  log "up in $((SECONDS - t0)) s: API https://$NODE_IP:$API_PORT, node(s) $(node_names) ($(node_ips)) Ready"
  log "  admin kubeconfig  $RUN/admin.kubeconfig"
  log "  hangar kubeconfig $RUN/hangar.kubeconfig (user 'hangar', no permissions until a Role is bound)"
  log "  env file          $RUN/testbed.env"
  log "  images            $REDIS_IMAGE ${VALKEY_IMAGE:+$VALKEY_IMAGE }$HAPROXY_IMAGE $PAUSE_IMAGE (imagePullPolicy: Never)"
}

# A failed up takes down what it started (its logs stay), unless HANGAR_K8S_KEEP_ON_FAILURE=1.
up_failed() {
  local rc=$?
  trap - EXIT
  [[ $rc == 0 ]] && return 0
  if [[ ${HANGAR_K8S_KEEP_ON_FAILURE:-0} == 1 ]]; then
    log "up failed (exit $rc); left as it is (HANGAR_K8S_KEEP_ON_FAILURE=1): run 'down' to clean"
  else
    log "up failed (exit $rc): taking down what it started; logs stay in $LOGS"
    set +e
    cmd_down
  fi
  exit "$rc"
}

cmd_status() {
  local c pid rc=0
  load_bin || true
  for c in $COMPONENTS_UP $(all_node_components); do
    if pid=$(daemon_pid "$c"); then printf '%-24s running (pid %s)\n' "$c" "$pid"
    else printf '%-24s not running\n' "$c"; rc=1; fi
  done
  if [[ $rc == 0 && -f "$RUN/admin.kubeconfig" && -n "$BIN" ]]; then
    if nodes_ready; then echo "$(nodes_recorded) node(s) Ready; API https://$NODE_IP:$API_PORT; env $RUN/testbed.env"
    else echo "a node is NOT Ready"; rc=1; fi
  else
    [[ $rc == 0 ]] || echo "testbed is not (fully) up"
  fi
  return $rc
}

# --- down -----------------------------------------------------------------------------------

# Deletes the rules that jump to KUBE-*/CNI-* chains, then flushes and deletes those chains.
clean_chains() {
  local ipt=$1 t chains rule c
  command -v "$ipt" >/dev/null 2>&1 || return 0
  for t in filter nat mangle raw; do
    chains=$("$ipt-save" -t "$t" 2>/dev/null | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p') || true
    [[ -z $chains ]] && continue
    while read -r rule; do
      [[ -n $rule ]] || continue
      eval "$ipt -w -t $t -D ${rule#-A }" 2>/dev/null || true
    done < <("$ipt" -w -t "$t" -S 2>/dev/null | grep -E -- '-j (KUBE|CNI)-' | grep -Ev '^-A (KUBE|CNI)-')
    for c in $chains; do "$ipt" -w -t "$t" -F "$c" 2>/dev/null || true; done
    for c in $chains; do "$ipt" -w -t "$t" -X "$c" 2>/dev/null || true; done
  done
}

# Unmounts everything mounted under a directory, deepest first.
umount_under() {
  local dir=$1 m i
  for ((i = 0; i < 5; i++)); do
    local mounts
    mounts=$(awk -v d="$dir" '{ m = $5; gsub(/\\040/, " ", m); if (m == d || index(m, d "/") == 1) print m }' /proc/self/mountinfo | sort -r)
    [[ -z $mounts ]] && return 0
    while read -r m; do umount -l "$m" 2>/dev/null || true; done <<<"$mounts"
  done
  awk -v d="$dir" '{ if ($5 == d || index($5, d "/") == 1) found = 1 } END { exit !found }' /proc/self/mountinfo && return 1
  return 0
}

# Kills the processes in a cgroup subtree (they are containers of this testbed), then removes it.
clean_cgroups() {
  local h d pid
  for h in /sys/fs/cgroup/*/; do
    d="${h}kubepods"
    [[ -d $d ]] || continue
    while read -r pid; do [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true; done \
      < <(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done
  sleep 0.3
  for h in /sys/fs/cgroup/*/; do
    d="${h}kubepods"
    [[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
    [[ -d $d ]] && log "warning: could not remove cgroup $d"
  done
  return 0
}

# No running container task and no pod interface left on the bridge, on any node.
pods_stopped() {
  [[ -z $(ctr_ tasks ls 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING"') ]] || return 1
  [[ -z $(ip -o link show master "$CNI_BRIDGE" 2>/dev/null) ]] || return 1
  local k
  for ((k = 2; k <= $(nodes_recorded); k++)); do
    node_vars "$k"
    daemon_pid "$N.containerd" >/dev/null || continue
    [[ -z $(ctr --address "$N_SOCK" -n k8s.io tasks ls 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING"') ]] || return 1
    [[ -z $(in_node ip -o link show master "$CNI_BRIDGE" 2>/dev/null) ]] || return 1
  done
}

host_state_has() { [[ -f "$RUN/host-state" ]] && grep -qxF "$1" "$RUN/host-state"; }

cmd_down() {
  local t0=$SECONDS c pid
  load_bin || true
  if ! any_alive && [[ ! -f "$RUN/host-state" ]] && [[ ! -d "$RUN/containerd" ]]; then
    log "not up (nothing running from $RUN); cleaning leftovers anyway"
  fi

  # 1. Pods first, while the kubelet runs: it stops the containers and tears their network down.
  local nodes
  nodes=$(nodes_recorded)
  if [[ -n $BIN ]] && daemon_pid kube-apiserver >/dev/null && daemon_pid kubelet >/dev/null; then
    stop_daemon kube-controller-manager # nothing recreates the pods
    stop_daemon kube-scheduler
    local n
    n=$(kc get pods -A --no-headers 2>/dev/null | wc -l) || n=0
    if ((n > 0)); then
      log "deleting $n pods"
      kc delete pods --all --all-namespaces --grace-period=2 --wait=false >/dev/null 2>&1 || true
      # The API objects do not matter (etcd goes too): what does is that the kubelet has stopped
      # every container and had CNI take every pod's network down.
      wait_for 60 "pods stopped" pods_stopped || log "some pods still run after 60 s: killing their containers"
    fi
  fi
  stop_daemon kube-controller-manager
  stop_daemon kube-scheduler
  stop_daemon kube-proxy
  stop_daemon kubelet
  # The other nodes, with what is left of their pods, their namespaces and cgroups.
  local k
  for ((k = 2; k <= nodes; k++)); do remove_node "$k"; done

  # 2. Whatever containers are left, through containerd.
  if daemon_pid containerd >/dev/null; then
    local ids
    ids=$(ctr_ tasks ls -q 2>/dev/null) || ids=""
    for c in $ids; do ctr_ tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    [[ -n $ids ]] && sleep 1
    for c in $ids; do ctr_ tasks delete -f "$c" >/dev/null 2>&1 || true; done
    ids=$(ctr_ containers ls -q 2>/dev/null) || ids=""
    for c in $ids; do ctr_ containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop_daemon kube-apiserver
  stop_daemon containerd
  stop_daemon etcd

  # 3. Shims and container processes still alive (by the pid files containerd keeps in the run dir).
  local f exe
  if [[ -d "$RUN/containerd/state" ]]; then
    while read -r f; do
      pid=$(<"$f") || continue
      [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || continue
      exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
      log "killing leftover ${exe##*/} (pid $pid, from $f)"
      kill -KILL "$pid" 2>/dev/null || true
    done < <(find "$RUN/containerd/state" \( -name init.pid -o -name shim.pid \) 2>/dev/null)
  fi
  clean_cgroups

  # 4. What lives outside the run dir.
  if [[ -n $BIN && -x $BIN/kube-proxy ]]; then
    "$BIN/kube-proxy" --cleanup >>"$LOGS/kube-proxy-cleanup.log" 2>&1 || true
  fi
  clean_chains iptables
  clean_chains ip6tables
  remove_traffic_guard
  if [[ -d /run/netns ]]; then
    for f in /run/netns/cni-*; do
      [[ -e $f ]] || continue
      host_state_has "netns $f" && continue
      umount "$f" 2>/dev/null || true; rm -f "$f"
    done
    host_state_has "existed /run/netns" || rmdir /run/netns 2>/dev/null || true
  fi
  if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
    local veth
    for veth in $(ip -o link show master "$CNI_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
      ip link del "$veth" 2>/dev/null || true
    done
    ip link del "$CNI_BRIDGE" 2>/dev/null || true
  fi
  ip link show "$NODE_DEV" >/dev/null 2>&1 && ip link del "$NODE_DEV"
  if command -v conntrack >/dev/null 2>&1; then
    for c in "${CLUSTER_CIDR}" "${SERVICE_CIDR}"; do
      conntrack -D -s "$c" >/dev/null 2>&1 || true
      conntrack -D -d "$c" >/dev/null 2>&1 || true
    done
  fi
  local p
  for p in $HOST_DIRS; do
    [[ -e $p ]] || continue
    if host_state_has "existed $p"; then continue; fi
    if [[ $p == /var/lib/kubelet || $p == /run/containerd ]]; then umount_under "$p" || { log "warning: mounts left under $p"; continue; }; fi
    rm -rf --one-file-system "$p"
  done
  if [[ -f "$RUN/host-state" ]]; then
    local what name value
    while read -r what name value; do
      [[ $what == sysctl ]] && set_sysctl "$name" "$value" 2>/dev/null || true
    done <"$RUN/host-state"
  fi

  # 5. The run dir itself; its logs stay for a post-mortem (cleared by the next up).
  if [[ -d $RUN ]]; then
    umount_under "$RUN" || die "mounts left under $RUN: not deleting it"
    find "$RUN" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf --one-file-system {} +
  fi

  local left="" n
  for n in kubelet kube-apiserver kube-proxy containerd etcd kube-controller kube-scheduler; do
    pgrep -x "$n" >/dev/null && left+=" $n"
  done
  [[ -n $left ]] && log "warning: still running (not started from $RUN?):$left"
  if iptables-save 2>/dev/null | grep -q '^:KUBE-'; then log "warning: KUBE-* chains remain"; fi
  log "down in $((SECONDS - t0)) s (caches kept in $HANGAR_K8S_CACHE, logs in $LOGS)"
}
