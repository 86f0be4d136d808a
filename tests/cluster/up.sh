#!/usr/bin/env bash
# Starts a real local control plane on loopback in DIR:
# etcd, kube-apiserver (RBAC, audit log), kube-controller-manager and
# kube-scheduler (both leader-electing), built from upstream by build.sh, and kwok
# with N fake nodes (default 3): real Node objects whose heartbeat Leases in
# kube-node-lease kwok renews (leaseDurationSeconds 20, renewed every 5s), and whose
# pods, once the real scheduler binds them, kwok's stages take to Running and Ready.
#
#   tests/cluster/up.sh DIR [--nodes N] [--coordinated] [--operators] [--audit-policy POLICY]
#
# --nodes 0: no kwok, pods stay Pending. --coordinated: coordinated leader election
# (the CoordinatedLeaderElection feature gate, coordination.k8s.io/v1beta1 LeaseCandidates
# served): kube-controller-manager and kube-scheduler join as candidates and the API
# server's own election controller picks and writes their leaders. --operators: real
# third-party operators beside the control plane (tests/cluster/operators.sh): metrics-server
# behind its APIService, the KEDA operator and argo-rollouts' controller, each with its own
# CRDs, RBAC and leader election; the API server then also has the front-proxy (request
# header) configuration an aggregated API authenticates requests with. --audit-policy: what the
# API server's audit log (DIR/audit.log) keeps of each request (never RequestReceived):
#   metadata             Metadata for everything (the default)
#   detailed             RequestResponse for the writes of the objects controllers share and
#                        fight over (Deployments and their /scale and /status, ReplicaSets,
#                        Leases, HorizontalPodAutoscalers, KEDA's ScaledObjects), Request for
#                        Secrets' and ConfigMaps' writes (their data in the log, as careless
#                        policies have it), Metadata for the rest
#   detailed-no-fields   the same with omitManagedFields: the objects without managedFields
#
# Writes DIR/admin.kubeconfig (system:masters), DIR/viewer.kubeconfig
# (get/list/watch everywhere), DIR/limited.kubeconfig (read-only in the one
# namespace named in DIR/limited.namespace), DIR/audit.log, DIR/logs/,
# DIR/pids/ (stop with down.sh DIR) and DIR/bin (the binaries).
# Prints the admin KUBECONFIG export line last. Several clusters may run at once.
# COORD_KCM_CONTROLLERS, when set, is passed as kube-controller-manager's
# --controllers (the benchmark cluster turns off the deployment and replicaset
# controllers so they do not race its loader). COORD_APISERVER_FLAGS, when set, is
# added to kube-apiserver's flags (tests/run.sh serves paginated lists from etcd, so
# that an expired continue token really answers 410). COORD_NODE_LEASE_SECONDS sets the
# kwok node leases' duration (default 20; the envelope benchmark uses the kubelet's 40).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { echo "usage: $0 DIR [--nodes N] [--coordinated] [--operators] [--audit-policy metadata|detailed|detailed-no-fields]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
target=$1; shift
nodes=3 coordinated=false operators=false audit_policy=metadata
while (($#)); do
  case $1 in
    --nodes) [[ ${2:-} =~ ^[0-9]+$ ]] || usage; nodes=$2; shift 2 ;;
    --audit-policy) [[ ${2:-} =~ ^(metadata|detailed|detailed-no-fields)$ ]] || usage; audit_policy=$2; shift 2 ;;
    --coordinated) coordinated=true; shift ;;
    --operators) operators=true; shift ;;
    *) usage ;;
  esac
done
mkdir -p "$target"
dir=$(cd "$target" && pwd)
pki=$dir/pki
# shellcheck source=tests/cluster/lib.sh
source "$here/lib.sh"
[[ ! -e "$dir/pids" ]] || die "$dir already holds a cluster (run down.sh $dir first)"

if $operators; then bin=$("$here/build.sh" --operators); else bin=$("$here/build.sh"); fi
ln -sfn "$bin" "$dir/bin"
mkdir -p "$dir/pki" "$dir/logs" "$dir/pids" "$dir/etcd"
start=$SECONDS

# --- ports: free loopback ports, distinct from each other -------------------
ETCD_PORT=$(free_port); taken+="$ETCD_PORT "
ETCD_PEER_PORT=$(free_port); taken+="$ETCD_PEER_PORT "
API_PORT=$(free_port); taken+="$API_PORT "
KCM_PORT=$(free_port); taken+="$KCM_PORT "
SCHED_PORT=$(free_port); taken+="$SCHED_PORT "
SERVER="https://127.0.0.1:$API_PORT"

# --- certificates -----------------------------------------------------------
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 30 \
  -subj "/CN=kubectl-coord-test-ca" || die "openssl could not make the CA"
cert apiserver "/CN=kube-apiserver" "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
cert admin "/O=system:masters/CN=kubectl-coord-admin"
cert kcm "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert viewer "/CN=coord-viewer"
cert limited "/CN=coord-limited"
# The front proxy: the client certificate the API server presents to aggregated APIs,
# which trust the user it names in request headers (signed by the same CA here).
cert front-proxy-client "/CN=front-proxy-client"
ossl genrsa -out "$pki/sa.key" 2048
ossl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

kubeconfig() { # kubeconfig NAME CERT [NAMESPACE]
  cat > "$dir/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: coord-local
  cluster:
    server: $SERVER
    certificate-authority: $pki/ca.crt
users:
- name: coord-$1
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: coord-$1
  context:
    cluster: coord-local
    user: coord-$1
${3:+    namespace: $3}
current-context: coord-$1
EOF
}
LIMITED_NS=coord-limited
kubeconfig admin admin
kubeconfig kcm kcm
kubeconfig scheduler scheduler
kubeconfig viewer viewer
kubeconfig limited limited "$LIMITED_NS"
echo "$LIMITED_NS" > "$dir/limited.namespace"

# --- processes --------------------------------------------------------------

log "starting etcd on 127.0.0.1:$ETCD_PORT"
launch etcd "$bin/etcd" --name coord --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "coord=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn \
  --quota-backend-bytes 8589934592
etcd_healthy() { curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
wait_for "etcd health" 60 etcd etcd_healthy

omit_managed_fields=false
[[ $audit_policy != detailed-no-fields ]] || omit_managed_fields=true
{
  printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nomitManagedFields: %s\nrules:\n' \
    "$omit_managed_fields"
  if [[ $audit_policy != metadata ]]; then
    cat <<'EOF'
- level: RequestResponse
  verbs: [create, update, patch, delete]
  resources:
  - {group: apps, resources: [deployments, deployments/scale, deployments/status, replicasets]}
  - {group: coordination.k8s.io, resources: [leases]}
  - {group: autoscaling, resources: [horizontalpodautoscalers]}
  - {group: keda.sh, resources: [scaledobjects]}
# As careless policies do: Secrets' and ConfigMaps' data in the log (history must never print it).
- level: Request
  verbs: [create, update, patch]
  resources:
  - {group: "", resources: [secrets, configmaps]}
EOF
  fi
  echo '- level: Metadata'
} > "$dir/audit-policy.yaml"
api_cle=() component_cle=() api_aggregation=()
if $operators; then
  api_aggregation=(--requestheader-client-ca-file "$pki/ca.crt" --requestheader-allowed-names front-proxy-client
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group
    --requestheader-extra-headers-prefix X-Remote-Extra-
    --proxy-client-cert-file "$pki/front-proxy-client.crt" --proxy-client-key-file "$pki/front-proxy-client.key")
fi
if $coordinated; then
  api_cle=(--feature-gates=CoordinatedLeaderElection=true --runtime-config=coordination.k8s.io/v1beta1=true)
  component_cle=(--feature-gates=CoordinatedLeaderElection=true)
fi
log "starting kube-apiserver on $SERVER"
launch kube-apiserver "$bin/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --secure-port "$API_PORT" --advertise-address 127.0.0.1 \
  --endpoint-reconciler-type none \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 \
  --authorization-mode RBAC \
  --audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/audit.log" \
  --audit-log-mode batch --audit-log-batch-max-wait 1s "${api_cle[@]}" "${api_aggregation[@]}" \
  ${COORD_APISERVER_FLAGS:-}
kc_admin=("$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig")
api_ready() { curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$SERVER/readyz"; }
wait_for "kube-apiserver /readyz" 120 kube-apiserver api_ready

log "starting kube-controller-manager and kube-scheduler (leader election on)"
launch kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig "$dir/kcm.kubeconfig" \
  --authentication-kubeconfig "$dir/kcm.kubeconfig" --authorization-kubeconfig "$dir/kcm.kubeconfig" \
  --leader-elect=true --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
  --use-service-account-credentials \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --service-cluster-ip-range 10.0.0.0/24 \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --controllers "${COORD_KCM_CONTROLLERS:-*}" "${component_cle[@]}"
cat > "$dir/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $dir/scheduler.kubeconfig
leaderElection:
  leaderElect: true
EOF
launch kube-scheduler "$bin/kube-scheduler" --config "$dir/scheduler.yaml" \
  --authentication-kubeconfig "$dir/scheduler.kubeconfig" --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" "${component_cle[@]}"

# --- RBAC for the test identities --------------------------------------------
"${kc_admin[@]}" apply -f - >/dev/null <<EOF || die "could not create the test RBAC objects"
apiVersion: v1
kind: Namespace
metadata: {name: $LIMITED_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: coord-viewer}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: [get, list, watch]
- nonResourceURLs: ["*"]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: coord-viewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: coord-viewer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: coord-viewer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: coord-limited, namespace: $LIMITED_NS}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: coord-limited, namespace: $LIMITED_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: coord-limited}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: coord-limited}
EOF

lease_held() { [[ -n $("${kc_admin[@]}" -n kube-system get lease "$1" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null) ]]; }
wait_for "the kube-controller-manager lease" 120 kube-controller-manager lease_held kube-controller-manager
wait_for "the kube-scheduler lease" 120 kube-scheduler lease_held kube-scheduler
wait_for "the default ServiceAccount" 120 kube-controller-manager "${kc_admin[@]}" -n default get serviceaccount default

if ((nodes > 0)); then
  log "starting kwok with $nodes fake nodes"
  launch kwok "$bin/kwok" --kubeconfig "$dir/admin.kubeconfig" --config "$bin/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds "${COORD_NODE_LEASE_SECONDS:-20}" --cidr 10.240.0.0/12 -v WARN
  for ((i = 0; i < nodes; i++)); do
    cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations: {node.alpha.kubernetes.io/ttl: "0", kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: kwok-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
# What kwok's node-initialize stage sets when a node brings none, plus the ephemeral storage
# a real kubelet reports: operators' Deployments (argo-rollouts') request some.
status:
  capacity: &capacity {cpu: 1k, memory: 1Ti, pods: 1M, ephemeral-storage: 1Ti}
  allocatable: *capacity
---
EOF
  done | "${kc_admin[@]}" apply -f - >/dev/null || die "could not create the kwok nodes"
  nodes_ready() {
    [[ $("${kc_admin[@]}" get nodes -l type=kwok -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' \
      | grep -c True) -eq $nodes ]]
  }
  wait_for "$nodes kwok nodes Ready" $((120 + nodes / 10)) kwok nodes_ready
fi

cat > "$dir/cluster.env" <<EOF
SERVER=$SERVER
API_PORT=$API_PORT
ETCD_PORT=$ETCD_PORT
KCM_PORT=$KCM_PORT
SCHED_PORT=$SCHED_PORT
LIMITED_NS=$LIMITED_NS
NODES=$nodes
COORDINATED=$coordinated
OPERATORS=$operators
AUDIT_POLICY=$audit_policy
EOF
if $operators; then
  LOG_TAG=operators bash "$here/operators.sh" "$dir" || die "the operators did not come up"
fi
log "ready in $((SECONDS - start))s: $SERVER (logs in $dir/logs, stop with tests/cluster/down.sh $dir)"
echo "export KUBECONFIG=$dir/admin.kubeconfig"
