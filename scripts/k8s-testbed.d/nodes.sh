# shellcheck shell=bash
# shellcheck disable=SC2016 # nsenter sh -c scripts take their arguments as $0, $1
# Sourced by scripts/k8s-testbed: the extra nodes of `up --nodes N` (N > 1), and stopping and
# starting one of them (`node stop K`, `node start K`) as a lost machine would.
#
# Node 1 is the single-node testbed as it always was: its kubelet, kube-proxy and containerd run
# on this machine's own network. Node K (2..N) runs a kubelet, a kube-proxy and a containerd of
# its own in namespaces of its own, held by one process (`unshare`):
# - a network namespace: one veth to this machine (hk8s-n<K> here, eth0 there) with the node's
#   TEST-NET address, the pods' bridge and pod CIDR of the node; routes only to the testbed's own
#   ranges (the node addresses' 192.0.2.0/24 and the pods' CLUSTER_CIDR, both through node 1's
#   address, which this machine routes on to the node that has them): nothing else is reachable;
# - a mount namespace (slave of this machine's: what is mounted here is seen there, not back), in
#   which the fixed paths of Kubernetes 1.20 (/var/lib/kubelet: device-plugin and pod-resources
#   sockets; /var/log/pods and /var/log/containers, whose directories a kubelet deletes for pods
#   it does not know; /var/lib/cni) are directories of the node's own;
# - its own cgroup root (/hangar-node<K>): a kubelet kills what runs in pod cgroups it does not
#   know under its own root.
# One containerd per node: a kubelet stops the pod sandboxes its runtime has that it does not
# know, so two kubelets cannot share one; and the runtime calls CNI in its own network namespace.

NODE_DEV_PREFIX=hk8s-n
# Ranges the extra nodes use: node K is ${NODE_NET}.(NODE_IP's last byte + K - 1), pods 198.18.(K-1).0/24.
NODE_NET=${NODE_IP%.*}
NODE_LAST=${NODE_IP##*.}
POD_NET=${POD_CIDR%.*.*} # 198.18

# Sets N_* for node $1 (2..N).
node_vars() {
  local k=$1
  N_NAME="$NODE_NAME-$k"
  N_IP="$NODE_NET.$((NODE_LAST + k - 1))"
  N_POD_CIDR="$POD_NET.$((k - 1)).0/24"
  N_POD_GW="$POD_NET.$((k - 1)).1"
  N_DIR="$RUN/nodes/$k"
  N_SOCK="$N_DIR/containerd/containerd.sock"
  N_VETH="$NODE_DEV_PREFIX$k"
  N_CGROUP="hangar-node$k"
  N="node$k" # prefix of its pid and log files
}

# Number of nodes of the testbed in the run dir (1 when none was recorded).
nodes_recorded() { if [[ -f "$RUN/node-count" ]]; then cat "$RUN/node-count"; else echo 1; fi; }

node_components() { echo "$1.holder $1.containerd $1.kubelet $1.kube-proxy"; }

all_node_components() {
  local k out=""
  for ((k = 2; k <= $(nodes_recorded); k++)); do out+=" $(node_components "node$k")"; done
  echo "$out"
}

holder_pid() { daemon_pid "$N.holder" sleep; }

# Runs a command in node $k's namespaces (its network and mount namespaces).
in_node() { local h; h=$(holder_pid) || return 1; nsenter --net="/proc/$h/ns/net" --mount="/proc/$h/ns/mnt" -- "$@"; }

# The process that holds the node's namespaces, with the node's own directories mounted over the
# fixed paths. It is started in the background by start_daemon: the mounts are made before it sleeps.
start_node_holder() {
  mkdir -p "$N_DIR"/{var-lib-kubelet,var-log-pods,var-log-containers,var-lib-cni}
  local p
  for p in /var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni; do mkdir -p "$p"; done
  start_daemon "$N.holder" unshare --net --mount --propagation slave -- sh -ec '
    mount --bind "$0/var-lib-kubelet" /var/lib/kubelet
    mount --bind "$0/var-log-pods" /var/log/pods
    mount --bind "$0/var-log-containers" /var/log/containers
    mount --bind "$0/var-lib-cni" /var/lib/cni
    exec sleep infinity' "$N_DIR"
  # until the mounts are made and it sleeps
  wait_for 10 "node $N_NAME's namespaces" holder_pid || die "the namespaces of node $N_NAME did not come up (log: $LOGS/$N.holder.log)"
}

# This machine's routes to node K and its pods. What this machine sends there leaves from the
# address node K routes back (the veth has none of its own): node 1's towards the node, the pods'
# gateway towards the pods, as towards node 1's own pods, so that hangar running here has one
# address for every pod (the edges admit it).
node_routes() {
  ip route replace "$N_IP/32" dev "$N_VETH" src "$NODE_IP"
  ip route replace "$N_POD_CIDR" via "$N_IP" dev "$N_VETH" src "$POD_GATEWAY"
}

# Node 1's pods' bridge, made before its first pod (the CNI bridge plugin takes it as it is): the
# routes to the other nodes' pods leave from its address.
setup_pod_bridge() {
  ip link show "$CNI_BRIDGE" >/dev/null 2>&1 || ip link add "$CNI_BRIDGE" type bridge
  ip addr replace "$POD_GATEWAY/${POD_CIDR#*/}" dev "$CNI_BRIDGE"
  ip link set "$CNI_BRIDGE" up
}

# The veth between this machine and node K, its address and routes, on both sides.
setup_node_network() {
  local h
  h=$(holder_pid)
  ip link del "$N_VETH" 2>/dev/null || true
  ip link add "$N_VETH" type veth peer name "$N_VETH-i"
  ip link set "$N_VETH-i" netns "$h"
  # node 1's address on this side too: what leaves here masqueraded (the host reaching a Service
  # whose pod is on node K) takes the address of its interface, which node K routes back
  ip addr replace "$NODE_IP/32" dev "$N_VETH"
  ip link set "$N_VETH" up
  node_routes
  nsenter --net="/proc/$h/ns/net" -- sh -ec '
    ip link set "$0" name eth0
    ip addr add "$1/32" dev eth0
    ip link set lo up
    ip link set eth0 up
    ip route add "$2/32" dev eth0
    ip route add "$3.0/24" via "$2" dev eth0
    ip route add "$4" via "$2" dev eth0
    echo 1 >/proc/sys/net/ipv4/ip_forward
    [ ! -f /proc/sys/net/bridge/bridge-nf-call-iptables ] || echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables' \
    "$N_VETH-i" "$N_IP" "$NODE_IP" "$NODE_NET" "$CLUSTER_CIDR"
}

# The node's cgroup root in every hierarchy (cpuset needs its cpus and mems before a child can hold tasks).
make_node_cgroups() {
  local h d
  for h in /sys/fs/cgroup/*/; do
    [[ -f ${h}cgroup.procs ]] || continue
    d="${h}$N_CGROUP"
    mkdir -p "$d"
    if [[ -f ${h}cpuset.cpus ]]; then
      cat "${h}cpuset.cpus" >"$d/cpuset.cpus"
      cat "${h}cpuset.mems" >"$d/cpuset.mems"
    fi
  done
}

write_node_cni_config() {
  mkdir -p "$N_DIR/cni/net.d" "$N_DIR/cni/ipam"
  cat >"$N_DIR/cni/net.d/10-hangar-testbed.conflist" <<EOF
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
        "dataDir": "$N_DIR/cni/ipam",
        "ranges": [[{ "subnet": "$N_POD_CIDR", "gateway": "$N_POD_GW" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

start_node_containerd() {
  mkdir -p "$N_DIR/containerd"/{root,state,runc,opt}
  containerd_config "$N_DIR/containerd" "$N_SOCK" "$N_DIR/cni/net.d" >"$N_DIR/containerd/config.toml"
  local h
  h=$(holder_pid)
  start_daemon "$N.containerd" nsenter --net="/proc/$h/ns/net" --mount="/proc/$h/ns/mnt" -- \
    /usr/bin/containerd --config "$N_DIR/containerd/config.toml"
  wait_ready 60 "$N.containerd" ctr --address "$N_SOCK" version
}

import_node_images() {
  local t
  for t in "${IMAGE_TARBALLS[@]}"; do
    ctr --address "$N_SOCK" --namespace k8s.io images import "$t" >>"$LOGS/$N.ctr-import.log" 2>&1 \
      || { tail -5 "$LOGS/$N.ctr-import.log" >&2; die "ctr images import $t into node $N_NAME failed"; }
  done
}

start_node_kubelet() {
  write_kubeconfig "$N_DIR/kubelet.kubeconfig" "system:node:$N_NAME"
  mkdir -p "$N_DIR/kubelet"
  kubelet_config "$N_IP" "$PKI/kubelet-$N_NAME" "$N_DIR/kubelet/volume-plugins" "/$N_CGROUP" >"$N_DIR/kubelet-config.yaml"
  local h
  h=$(holder_pid)
  start_daemon "$N.kubelet" nsenter --net="/proc/$h/ns/net" --mount="/proc/$h/ns/mnt" -- "$BIN/kubelet" \
    --config="$N_DIR/kubelet-config.yaml" --kubeconfig="$N_DIR/kubelet.kubeconfig" \
    --root-dir="$N_DIR/kubelet" --cert-dir="$N_DIR/kubelet/pki" \
    --container-runtime=remote --container-runtime-endpoint="unix://$N_SOCK" \
    --runtime-request-timeout=2m --pod-infra-container-image="docker.io/$PAUSE_IMAGE" \
    --hostname-override="$N_NAME" --node-ip="$N_IP" --v=1
  wait_ready 60 "$N.kubelet" in_node curl -fsS "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
}

start_node_kube_proxy() {
  local h
  h=$(holder_pid)
  start_daemon "$N.kube-proxy" nsenter --net="/proc/$h/ns/net" --mount="/proc/$h/ns/mnt" -- "$BIN/kube-proxy" \
    --kubeconfig="$RUN/kubeconfigs/kube-proxy.kubeconfig" --proxy-mode=iptables \
    --hostname-override="$N_NAME" --bind-address="$N_IP" --cluster-cidr="$CLUSTER_CIDR" \
    --nodeport-addresses="$N_IP/32" \
    --healthz-bind-address="127.0.0.1:$PROXY_HEALTHZ_PORT" --metrics-bind-address="127.0.0.1:$PROXY_METRICS_PORT" \
    --conntrack-max-per-core=0 --conntrack-min=0 \
    --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0 --v=1
  wait_ready 60 "$N.kube-proxy" in_node curl -fsS "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz"
}

# Node K, from nothing: namespaces, network, cgroups, containerd with the images, kubelet, kube-proxy.
start_node() {
  node_vars "$1"
  log "starting node $N_NAME ($N_IP, pods $N_POD_CIDR)"
  mkdir -p "$N_DIR"
  start_node_holder
  setup_node_network
  make_node_cgroups
  write_node_cni_config
  start_node_containerd
  import_node_images
  start_node_kubelet
  start_node_kube_proxy
}

node_ready_named() {
  [[ $(kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

# Kills what node K runs, at once (SIGKILL, as a machine that loses power): kube-proxy, kubelet,
# every process in its cgroups (the containers), containerd and its shims.
kill_node() {
  node_vars "$1"
  local c pid f exe h
  for c in kube-proxy kubelet containerd; do
    if pid=$(daemon_pid "$N.$c"); then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$PIDS/$N.$c.pid"
  done
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h$N_CGROUP ]] || continue
    while read -r pid; do [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true; done \
      < <(find "$h$N_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done
  if [[ -d "$N_DIR/containerd/state" ]]; then
    while read -r f; do
      pid=$(<"$f") || continue
      [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || continue
      exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
      kill -KILL "$pid" 2>/dev/null || true
    done < <(find "$N_DIR/containerd/state" \( -name init.pid -o -name shim.pid \) 2>/dev/null)
  fi
}

# Takes node K away for good (down): what it runs, its namespaces (its veth and mounts go with
# them), its cgroups.
remove_node() {
  kill_node "$1"
  local pid h
  if pid=$(holder_pid); then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$PIDS/$N.holder.pid"
  ip link del "$N_VETH" 2>/dev/null || true
  sleep 0.2
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h$N_CGROUP ]] && find "$h$N_CGROUP" -depth -type d -exec rmdir {} \; 2>/dev/null
    [[ -d $h$N_CGROUP ]] && log "warning: could not remove cgroup $h$N_CGROUP"
  done
  return 0
}

# `node stop K`: node K lost, as a machine that dies: its network cut (no packet in or out), then
# everything it runs killed. Kubernetes sees it NotReady after node-monitor-grace-period (40 s).
cmd_node_stop() {
  local k=$1
  node_vars "$k"
  [[ -d $N_DIR ]] || die "no node $k in this testbed ($(nodes_recorded) nodes)"
  ip link set "$N_VETH" down 2>/dev/null || true
  kill_node "$k"
  log "node $N_NAME stopped: network cut, kubelet, kube-proxy, containerd and its containers killed"
}

# `node start K`: node K back (as the machine starting again): network up, containerd, kubelet,
# kube-proxy; it registers again and is Ready when its kubelet says so.
cmd_node_start() {
  local k=$1
  load_bin || die "no Kubernetes binaries"
  build_images "$K8S_DIR" >/dev/null
  node_vars "$k"
  [[ -d $N_DIR ]] || die "no node $k in this testbed ($(nodes_recorded) nodes)"
  holder_pid >/dev/null || die "node $k's namespaces are gone: take the testbed down and up"
  ip link set "$N_VETH" up
  node_routes
  daemon_pid "$N.containerd" >/dev/null || start_node_containerd
  daemon_pid "$N.kubelet" >/dev/null || start_node_kubelet
  daemon_pid "$N.kube-proxy" >/dev/null || start_node_kube_proxy
  wait_for 120 "node $N_NAME Ready" node_ready_named "$N_NAME" || die "node $N_NAME not Ready (log: $LOGS/$N.kubelet.log)"
  log "node $N_NAME started and Ready"
}

# The chain that keeps the pods' traffic on this machine: from the pods' range, only to the node
# addresses' range and the pods' range (Services are translated before; one that no longer exists
# is refused rather than sent to the default route).
TESTBED_CHAIN=HANGAR-TESTBED
setup_traffic_guard() {
  iptables -w -N "$TESTBED_CHAIN" 2>/dev/null || iptables -w -F "$TESTBED_CHAIN"
  iptables -w -A "$TESTBED_CHAIN" -d "$NODE_NET.0/24" -j RETURN
  iptables -w -A "$TESTBED_CHAIN" -d "$CLUSTER_CIDR" -j RETURN
  iptables -w -A "$TESTBED_CHAIN" -j REJECT --reject-with icmp-net-prohibited
  iptables -w -C FORWARD -s "$CLUSTER_CIDR" -j "$TESTBED_CHAIN" 2>/dev/null \
    || iptables -w -I FORWARD 1 -s "$CLUSTER_CIDR" -j "$TESTBED_CHAIN"
}

remove_traffic_guard() {
  while iptables -w -D FORWARD -s "$CLUSTER_CIDR" -j "$TESTBED_CHAIN" 2>/dev/null; do :; done
  iptables -w -F "$TESTBED_CHAIN" 2>/dev/null || true
  iptables -w -X "$TESTBED_CHAIN" 2>/dev/null || true
}
