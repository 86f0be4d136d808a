#!/usr/bin/env bash
# The demo, one command on a fresh machine:
#   bash demo/run.sh [--keep]
# Builds what is missing, starts a local control plane with three kwok nodes (pods are
# scheduled and run; the nodes' heartbeat Leases are renewed) and real operators beside it
# (metrics-server, KEDA, argo-rollouts: tests/cluster/operators.sh), applies examples/, starts
# a healthy leader election between two real client-go processes, and runs every
# kubectl coord command on it. Stops the cluster at the end unless --keep.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
keep=false
[[ ${1:-} == --keep ]] && keep=true
dir="$root/.demo/cluster"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

if [[ -e $dir/pids ]]; then
  echo "a demo cluster is already running in $dir; stopping it first" >&2
  bash tests/cluster/down.sh "$dir"
fi
cargo build --locked --release --bins >&2
bash tests/cluster/up.sh "$dir" --operators >/dev/null
$keep || trap 'bash tests/cluster/down.sh "$dir"' EXIT
bin="$dir/bin"
export KUBECONFIG="$dir/admin.kubeconfig"
export PATH="$root/target/release:$bin:$PATH"

kubectl apply -f examples/ >/dev/null
# A healthy election: two real client-go participants on one lease.
for who in a b; do
  setsid "$bin/coord-test-elector" -kubeconfig "$KUBECONFIG" -namespace coord-demo -lease healthy-election \
    -identity "demo-elector-$who"_"$(cat /proc/sys/kernel/random/uuid)" >/dev/null 2>&1 < /dev/null &
  echo $! > "$dir/pids/elector-$who.pid"
  disown
done
# A leader that is one of leader-app's pods, and one whose pod was deleted while
# its lease is still fresh (the lock outlives the process that held it).
until [[ $(kubectl -n coord-demo get pods -l app=leader-app -o name | wc -l) -ge 3 ]]; do sleep 0.5; done
until [[ $(kubectl -n coord-demo get pods -l app=shop,track=stable -o name | wc -l) -ge 2 ]]; do sleep 0.5; done
pod=$(kubectl -n coord-demo get pods -l app=leader-app -o jsonpath='{.items[0].metadata.name}')
now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
kubectl apply -f - >/dev/null <<YAML
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader-app-lock, namespace: coord-demo}
spec: {holderIdentity: "${pod}_$(cat /proc/sys/kernel/random/uuid)", leaseDurationSeconds: 3600, leaseTransitions: 1, acquireTime: "$now", renewTime: "$now"}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: orphaned-lock, namespace: coord-demo}
spec: {holderIdentity: "leader-app-5d8f7c9b4-gone1_$(cat /proc/sys/kernel/random/uuid)", leaseDurationSeconds: 3600, leaseTransitions: 2, acquireTime: "$now", renewTime: "$now"}
YAML
until [[ -n $(kubectl -n coord-demo get lease healthy-election -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null) ]]; do sleep 0.5; done

say "kubectl coord version"
kubectl coord version
say "kubectl coord leases -A            # the control plane's own elections"
kubectl coord leases -A
say "kubectl coord leases -n kube-node-lease   # kwok's nodes renew their heartbeats every 5s"
kubectl coord leases -n kube-node-lease
say "kubectl coord leases -n coord-demo -o wide"
kubectl coord leases -n coord-demo -o wide
say "kubectl coord leases -n coord-demo --exit-code; echo \$?"
kubectl coord leases -n coord-demo --exit-code >/dev/null && echo 0 || echo $?
say "kubectl coord leases -n coord-demo healthy-election -o yaml"
kubectl coord leases -n coord-demo healthy-election -o yaml

say "kubectl coord overlaps -n coord-demo"
kubectl coord overlaps -n coord-demo
say "kubectl coord overlaps -n coord-demo --explain -l tier=batch   # only a NotIn separates them"
kubectl coord overlaps -n coord-demo --explain -l tier=batch
say "kubectl coord overlaps -n coord-demo --cross-kind -l app=shop   # a StatefulSet against a Deployment"
kubectl coord overlaps -n coord-demo --cross-kind -l app=shop
say "kubectl coord overlaps -n coord-demo --exit-code --min-severity error; echo \$?"
kubectl coord overlaps -n coord-demo --exit-code --min-severity error >/dev/null && echo 0 || echo $?

# The HPA-style fight on spec.replicas: a GitOps tool applies, someone scales.
kubectl apply --server-side --field-manager=gitops -f examples/server-side/storefront.yaml >/dev/null
kubectl -n coord-demo scale deployment storefront --replicas=4 >/dev/null
say "kubectl coord fields deploy/storefront -n coord-demo --by-manager"
kubectl coord fields deploy/storefront -n coord-demo --by-manager
say "kubectl coord fields deploy/storefront -n coord-demo -o wide --path .spec"
kubectl coord fields deploy/storefront -n coord-demo -o wide --path .spec
say "kubectl coord fields deploy/storefront -n coord-demo -o blame   # the object, each line with who owns it"
kubectl coord fields deploy/storefront -n coord-demo -o blame
say "kubectl coord fields -n coord-demo   # census of every workload object"
kubectl coord fields -n coord-demo
say "kubectl coord fields deploy/storefront -n coord-demo --watch --watch-timeout 10s   # while gitops and a scaler fight"
kubectl coord fields deploy/storefront -n coord-demo --watch --watch-timeout 10s &
fieldwatch=$!
sleep 2
for replicas in 5 6; do
  kubectl apply --server-side --force-conflicts --field-manager=gitops -f examples/server-side/storefront.yaml >/dev/null
  sleep 1
  kubectl -n coord-demo scale deployment storefront --replicas=$replicas >/dev/null
  sleep 1
done
wait $fieldwatch

# Ownership broken: an owner recreated under the same name, and a deletion that never ends.
uid=$(kubectl -n coord-demo get cm release-v1 -o jsonpath='{.metadata.uid}')
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: release-v1-assets
  namespace: coord-demo
  finalizers: [coord.example/archive]
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: release-v1, uid: "$uid"}]
YAML
kubectl -n coord-demo delete cm release-v1 >/dev/null
kubectl apply -f examples/owners.yaml >/dev/null
kubectl -n coord-demo delete cm retired-settings --wait=false >/dev/null
say "kubectl coord owners deploy/checkout -n coord-demo"
kubectl coord owners deploy/checkout -n coord-demo
pod=$(kubectl -n coord-demo get pods -l app=shop,track=stable -o jsonpath='{.items[0].metadata.name}')
say "kubectl coord owners pod/$pod -n coord-demo --up --cascade=foreground"
kubectl coord owners "pod/$pod" -n coord-demo --up --cascade=foreground
say "kubectl coord owners --all -n coord-demo --stuck-after 0s --exit-code; echo \$?"
kubectl coord owners --all -n coord-demo --stuck-after 0s --exit-code && echo 0 || echo $?

# Sequencing: who reacted to what below a Deployment, live and after the fact.
until [[ $(kubectl -n coord-demo get pods -l app=payments -o name | wc -l) -ge 2 ]]; do sleep 0.5; done
say "kubectl coord trace deploy/payments -n coord-demo --settle 3s -- kubectl -n coord-demo rollout restart deploy/payments"
kubectl coord trace deploy/payments -n coord-demo --settle 3s -- kubectl -n coord-demo rollout restart deploy/payments
say "kubectl coord trace deploy/payments -n coord-demo -o wide   # the same chain, reconstructed from live state"
kubectl coord trace deploy/payments -n coord-demo -o wide
# The chain breaks: kube-controller-manager frozen until its lease expires, then a new generation.
kcm=$(cat "$dir/pids/kube-controller-manager.pid")
kill -STOP "$kcm"
thaw() { kill -CONT "$kcm" 2>/dev/null || true; }
trap 'thaw; $keep || bash tests/cluster/down.sh "$dir"' EXIT
until kubectl coord leases -n kube-system kube-controller-manager -o json | grep -q '"state": "expired"'; do sleep 1; done
kubectl -n coord-demo set env deploy/payments STEP=frozen >/dev/null
sleep 6
say "kubectl coord trace deploy/payments -n coord-demo --stall-after 5s --exit-code; echo \$?   # kube-controller-manager stopped (SIGSTOP)"
kubectl coord trace deploy/payments -n coord-demo --stall-after 5s --exit-code && echo 0 || echo $?
say "kubectl coord check -n coord-demo --stall-after 5s --exit-code; echo \$?   # every analysis at once, the frozen controller among them"
kubectl coord check -n coord-demo --stall-after 5s --exit-code && echo 0 || echo $?
thaw
while kubectl coord trace deploy/payments -n coord-demo --stall-after 5s -o json | grep -q '"generation-not-observed"'; do sleep 1; done
say "kubectl coord trace deploy/payments -n coord-demo --stall-after 5s | tail -n 12   # after SIGCONT: the leader is back, the chain completes"
kubectl coord trace deploy/payments -n coord-demo --stall-after 5s | tail -n 12

say "kubectl coord check -n coord-demo --only leases,overlaps --min-severity error -o junit | head -n 8   # for a CI dashboard"
kubectl coord check -n coord-demo --only leases,overlaps --min-severity error -o junit | head -n 8

leader=$(kubectl -n coord-demo get lease healthy-election -o 'jsonpath={.spec.holderIdentity}')
say "kubectl coord leases -n coord-demo healthy-election --watch --watch-timeout 20s   # while the leader ($leader) is killed"
kubectl coord leases -n coord-demo healthy-election --watch --watch-timeout 20s &
watcher=$!
sleep 3
for who in a b; do
  [[ $leader == demo-elector-${who}_* ]] && kill -KILL "$(cat "$dir/pids/elector-$who.pid")"
done
wait $watcher

# On a real cluster: third-party operators, an aggregated API that goes down, accepted findings.
kubectl apply -f examples/operators/ >/dev/null
until [[ $(kubectl -n coord-operators get rollout storefront -o 'jsonpath={.status.phase}' 2>/dev/null) == Healthy &&
  $(kubectl -n coord-operators get deploy worker -o 'jsonpath={.status.availableReplicas}' 2>/dev/null) == 2 ]]; do sleep 0.5; done
say "kubectl coord leases -n keda; kubectl coord leases -n argo-rollouts   # each operator's election, holder -> its pod"
kubectl coord leases -n keda
kubectl coord leases -n argo-rollouts
say "kubectl coord owners scaledobject/worker -n coord-operators   # KEDA: the ScaledObject owns an HPA"
kubectl coord owners scaledobject/worker -n coord-operators
say "kubectl coord trace rollout/storefront -n coord-operators | tail -n 12   # argo-rollouts drives the chain"
kubectl coord trace rollout/storefront -n coord-operators | tail -n 12
say "kubectl coord check -n coord-operators --exit-code; echo \$?   # a healthy cluster running real operators"
kubectl coord check -n coord-operators --exit-code && echo 0 || echo $?
kill "$(cat "$dir/pids/metrics-server.pid")"
until [[ $(kubectl get apiservice v1beta1.metrics.k8s.io -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}') == False ]]; do sleep 1; done
say "kubectl coord check -n coord-operators --exit-code; echo \$?   # metrics-server stopped: named, skipped, incomplete (4)"
kubectl coord check -n coord-operators --exit-code && echo 0 || echo $?
say "kubectl coord check -n coord-operators --exit-code --ignore-file examples/ignore/coord-ignore.yaml; echo \$?"
kubectl coord check -n coord-operators --exit-code --ignore-file examples/ignore/coord-ignore.yaml && echo 0 || echo $?

if $keep; then
  echo
  echo "The cluster keeps running. Explore with:"
  echo "  export KUBECONFIG=$KUBECONFIG PATH=$root/target/release:$bin:\$PATH"
  echo "Stop it with: bash tests/cluster/down.sh $dir"
fi
