#!/usr/bin/env bash
# Starts real third-party operators beside a cluster that up.sh DIR --operators started,
# as they run in a real cluster, from their own modules' manifests (build.sh --operators
# links each module's source as DIR/bin/src-NAME):
#
#   metrics-server   the real aggregated API behind APIService v1beta1.metrics.k8s.io. Its
#                    Service is an ExternalName for localhost, which the API server's
#                    service resolver proxies to (no kube-proxy here).
#   keda-operator    KEDA: a ScaledObject owns an HPA, which writes its target's replicas
#                    through the scale subresource. Leader election on (Lease
#                    keda/operator.keda.sh).
#   rollouts         argo-rollouts' controller: a Rollout owns ReplicaSets and edits its
#                    Services' selectors. Leader election on (Lease
#                    argo-rollouts/argo-rollouts-controller-lock).
#
# Each operator's own Deployment manifest is applied too, so its pod exists on a kwok node;
# the real process then runs on this machine with that pod's name as its hostname (its own
# UTS namespace), so that its lease names a holder that resolves to its pod, as in a real
# cluster. Each runs as its ServiceAccount (a client certificate for
# system:serviceaccount:NS:NAME), bound by its own RBAC manifests.
#
#   tests/cluster/operators.sh DIR
#
# Pids go to DIR/pids (down.sh stops them), logs to DIR/logs, ports to DIR/operators.env.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$(cd "$1" && pwd)
pki=$dir/pki
# shellcheck source=tests/cluster/lib.sh
source "$here/lib.sh"
# shellcheck source=/dev/null
source "$dir/cluster.env"
bin=$dir/bin
kc=("$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig")
for f in metrics-server keda-operator rollouts-controller src-metrics-server src-keda src-rollouts; do
  [[ -e $bin/$f ]] || die "$bin/$f is missing (build.sh --operators builds it)"
done

# as_service_account NAMESPACE NAME: a kubeconfig authenticating as that ServiceAccount.
as_service_account() {
  local ns=$1 name=$2
  cert "sa-$ns-$name" "/CN=system:serviceaccount:$ns:$name"
  cat > "$dir/sa-$ns-$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: coord-local
  cluster: {server: $SERVER, certificate-authority: $pki/ca.crt}
users:
- name: $name
  user: {client-certificate: $pki/sa-$ns-$name.crt, client-key: $pki/sa-$ns-$name.key}
contexts:
- name: $name
  context: {cluster: coord-local, user: $name, namespace: $ns}
current-context: $name
EOF
  echo "$dir/sa-$ns-$name.kubeconfig"
}

# pod_of NAMESPACE SELECTOR: the name of the Running pod the selector picks (waits for it).
pod_of() {
  local ns=$1 selector=$2 name=""
  for _ in $(seq 300); do
    name=$("${kc[@]}" -n "$ns" get pods -l "$selector" --field-selector status.phase=Running \
      -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null || true)
    [[ -n $name ]] && { echo "$name"; return; }
    sleep 0.2
  done
  die "no Running pod for $selector in $ns"
}

# "${as_pod[@]}" NAME CMD...: runs CMD with NAME as the hostname, in a UTS namespace of
# its own (the same process: unshare and sh exec it, so the recorded pid is the operator's).
as_pod=(unshare --uts sh -c 'hostname "$1"; shift; exec "$@"' sh)

lease_held() { [[ -n $("${kc[@]}" -n "$1" get lease "$2" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null) ]]; }
available() {
  [[ $("${kc[@]}" get apiservice "$1" -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}' 2>/dev/null) == True ]]
}

# --- metrics-server -----------------------------------------------------------
ms_src=$bin/src-metrics-server/manifests/base
MS_PORT=$(free_port)
# Its kustomization as released (RBAC, Deployment, APIService), but for its ClusterIP Service:
# nothing routes a cluster IP here (see below).
"${kc[@]}" kustomize "$ms_src" 2>/dev/null | awk -v RS='\n---\n' '!/(^|\n)kind: Service\n/ { printf "%s\n---\n", $0 }' \
  | "${kc[@]}" apply -f - >/dev/null
ms_kubeconfig=$(as_service_account kube-system metrics-server)
log "starting metrics-server on 127.0.0.1:$MS_PORT"
launch metrics-server "$bin/metrics-server" --kubeconfig "$ms_kubeconfig" \
  --authentication-kubeconfig "$ms_kubeconfig" --authorization-kubeconfig "$ms_kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$MS_PORT" --cert-dir "$dir/metrics-server-certs" \
  --kubelet-insecure-tls --kubelet-preferred-address-types InternalIP --metric-resolution 15s
# The module's APIService as it is, pointed at this process: an ExternalName Service for
# localhost on its port (the API server resolves ExternalName Services itself).
"${kc[@]}" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system, labels: {k8s-app: metrics-server}}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{name: https, port: $MS_PORT, protocol: TCP}]
EOF
"${kc[@]}" patch apiservice v1beta1.metrics.k8s.io --type merge -p "{\"spec\":{\"service\":{\"port\":$MS_PORT}}}" >/dev/null
wait_for "APIService v1beta1.metrics.k8s.io Available" 120 metrics-server available v1beta1.metrics.k8s.io

# --- KEDA -----------------------------------------------------------------------
keda_src=$bin/src-keda/config
"${kc[@]}" apply -f "$keda_src/general/namespace.yaml" >/dev/null 2>&1 || "${kc[@]}" create namespace keda >/dev/null
"${kc[@]}" apply --server-side -f "$keda_src/crd/bases/" >/dev/null
"${kc[@]}" apply -f "$keda_src/service_account/service_account.yaml" -f "$keda_src/rbac/role.yaml" \
  -f "$keda_src/rbac/role_binding.yaml" -f "$keda_src/manager/manager.yaml" >/dev/null
keda_pod=$(pod_of keda app=keda-operator)
keda_kubeconfig=$(as_service_account keda keda-operator)
mkdir -p "$dir/keda-certs"
cp "$pki/ca.crt" "$dir/keda-certs/ca.crt"
cp "$pki/apiserver.crt" "$dir/keda-certs/tls.crt"
cp "$pki/apiserver.key" "$dir/keda-certs/tls.key"
KEDA_METRICS_PORT=$(free_port); KEDA_PROBE_PORT=$(free_port); KEDA_GRPC_PORT=$(free_port)
log "starting the KEDA operator as pod keda/$keda_pod"
launch keda-operator env POD_NAMESPACE=keda KEDA_CLUSTER_OBJECT_NAMESPACE=keda WATCH_NAMESPACE="" \
  "${as_pod[@]}" "$keda_pod" "$bin/keda-operator" --kubeconfig "$keda_kubeconfig" \
  --leader-elect --metrics-bind-address "127.0.0.1:$KEDA_METRICS_PORT" \
  --health-probe-bind-address "127.0.0.1:$KEDA_PROBE_PORT" \
  --metrics-service-bind-address "127.0.0.1:$KEDA_GRPC_PORT" --cert-dir "$dir/keda-certs" \
  --zap-log-level info
wait_for "the KEDA operator's lease" 120 keda-operator lease_held keda operator.keda.sh

# --- argo-rollouts ----------------------------------------------------------------
ro_src=$bin/src-rollouts/manifests
"${kc[@]}" create namespace argo-rollouts >/dev/null
"${kc[@]}" apply --server-side -k "$ro_src/crds" >/dev/null
"${kc[@]}" -n argo-rollouts apply -f "$ro_src/base/argo-rollouts-sa.yaml" -f "$ro_src/base/argo-rollouts-config.yaml" \
  -f "$ro_src/base/argo-rollouts-notification-secret.yaml" -f "$ro_src/base/argo-rollouts-deployment.yaml" \
  -f "$ro_src/role/argo-rollouts-clusterrole.yaml" \
  -f "$ro_src/cluster-install/argo-rollouts-clusterrolebinding.yaml" >/dev/null
ro_pod=$(pod_of argo-rollouts app.kubernetes.io/name=argo-rollouts)
ro_kubeconfig=$(as_service_account argo-rollouts argo-rollouts)
RO_METRICS_PORT=$(free_port); RO_HEALTHZ_PORT=$(free_port)
log "starting argo-rollouts' controller as pod argo-rollouts/$ro_pod"
launch rollouts-controller env POD_NAMESPACE=argo-rollouts "${as_pod[@]}" "$ro_pod" "$bin/rollouts-controller" \
  --kubeconfig "$ro_kubeconfig" --leader-elect --metricsPort "$RO_METRICS_PORT" --healthzPort "$RO_HEALTHZ_PORT"
wait_for "argo-rollouts' lease" 120 rollouts-controller lease_held argo-rollouts argo-rollouts-controller-lock

cat > "$dir/operators.env" <<EOF
MS_PORT=$MS_PORT
KEDA_POD=$keda_pod
ROLLOUTS_POD=$ro_pod
EOF
log "operators up: metrics-server, keda-operator ($keda_pod), rollouts-controller ($ro_pod)"
