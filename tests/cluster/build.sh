#!/usr/bin/env bash
# Builds the pinned upstream control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl), krew, toxiproxy and kwok from the Go
# module proxy, once, into a cache outside the source tree keyed by version
# and by the hash of the pinning go.mod/go.sum files. Prints the bin dir.
#
#   tests/cluster/build.sh             # build what is missing, print bin dir
#   tests/cluster/build.sh --operators # also the third-party operators (up.sh --operators)
#   tests/cluster/build.sh --peers     # also the benchmarks' peers (kubectl-tree)
#   KUBECTL_COORD_CACHE=/x build.sh    # choose the cache root
set -euo pipefail

# mod_version DIR MODULE: the version DIR/go.mod requires (inside or outside a block).
mod_version() { awk -v m="$2" '($1=="require" && $2==m) {print $3; exit} ($1==m) {print $2; exit}' "$1/go.mod"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_VERSION=$(mod_version "$here/k8s" k8s.io/kubernetes)
ETCD_VERSION=$(mod_version "$here/etcd" go.etcd.io/etcd/server/v3)
KREW_VERSION=$(mod_version "$here/krew" sigs.k8s.io/krew)
TOXIPROXY_VERSION=$(mod_version "$here/toxiproxy" github.com/Shopify/toxiproxy/v2)
KWOK_VERSION=$(mod_version "$here/kwok" sigs.k8s.io/kwok)
CTRLRT_VERSION=$(mod_version "$here/ctrlrt" sigs.k8s.io/controller-runtime)
cache_root=${KUBECTL_COORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-coord}

log() { printf '[build] %s\n' "$*" >&2; }

# pin_hash DIR [FILE...]: hash of the module's pins (and of any extra sources).
pin_hash() { local d=$1; shift; cat "$d/go.mod" "$d/go.sum" "$@" | sha256sum | cut -c1-12; }

# build_set NAME VERSION HASH MODDIR LDFLAGS PKG...: builds PKGs into
# $cache_root/NAME-VERSION-HASH/bin unless a complete earlier build is there.
build_set() {
  local name=$1 version=$2 hash=$3 moddir=$4 ldflags=$5; shift 5
  local out="$cache_root/$name-$version-$hash"
  if [[ -f "$out/.complete" ]]; then
    echo "$out/bin"; return
  fi
  log "building $name $version into $out (first run only; several minutes)"
  mkdir -p "$out/bin"
  local start=$SECONDS pkg
  for pkg in "$@"; do
    log "  go build $pkg"
    # An explicit exit: errexit does not reach into the $(...) that callers run this in, and
    # a failed build must not be marked complete.
    (cd "$moddir" && env CGO_ENABLED=0 GOFLAGS=-mod=readonly ${GOTOOLCHAIN_FOR_BUILD:+GOTOOLCHAIN=$GOTOOLCHAIN_FOR_BUILD} \
        go build -trimpath -tags "selinux,notest${GOTAGS_FOR_BUILD:+,$GOTAGS_FOR_BUILD}" -ldflags "$ldflags" -o "$out/bin/" "$pkg") \
      || { log "FAILED: go build $pkg"; exit 1; }
  done
  log "built $name in $((SECONDS - start))s"
  touch "$out/.complete"
  echo "$out/bin"
}

with_operators=false with_peers=false
for arg; do
  case $arg in
    --operators) with_operators=true ;;
    --peers) with_peers=true ;;
    *) echo "usage: build.sh [--operators] [--peers]" >&2; exit 2 ;;
  esac
done

command -v go >/dev/null || { echo "build.sh: go is not installed (needed to build the control plane)" >&2; exit 1; }

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
stamp=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  stamp+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

k8s_bin=$(build_set k8s "$K8S_VERSION" "$(pin_hash "$here/k8s")" "$here/k8s" "-s -w $stamp" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
etcd_bin=$(build_set etcd "$ETCD_VERSION" "$(pin_hash "$here/etcd")" "$here/etcd" "-s -w" go.etcd.io/etcd/server/v3)
krew_bin=$(build_set krew "$KREW_VERSION" "$(pin_hash "$here/krew")" "$here/krew" "-s -w" \
  sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest)
# A real client-go leader-election participant for the lease tests.
elector_bin=$(build_set elector "$K8S_VERSION" "$(pin_hash "$here/k8s" "$here"/k8s/elector/*.go)" "$here/k8s" "-s -w" \
  ./elector)
# The benchmark and scale-test loader, on the same pinned client-go.
loader_bin=$(build_set loader "$K8S_VERSION" "$(pin_hash "$here/k8s" "$here"/k8s/loader/*.go)" "$here/k8s" "-s -w" \
  ./loader)
# The benchmarks' floor: replays a command's request trace with a plain client.
floor_bin=$(build_set floor "$K8S_VERSION" "$(pin_hash "$here/k8s" "$here"/k8s/floor/*.go)" "$here/k8s" "-s -w" \
  ./floor)
# A network simulator for the benchmark over a WAN-like link (scripts/bench.sh --link wan).
toxiproxy_bin=$(build_set toxiproxy "$TOXIPROXY_VERSION" "$(pin_hash "$here/toxiproxy")" "$here/toxiproxy" "-s -w" \
  github.com/Shopify/toxiproxy/v2/cmd/server)

# Fake nodes for the test cluster: kwok, with its own stage definitions (node-initialize,
# node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete) from the same module.
kwok_bin=$(build_set kwok "$KWOK_VERSION" "$(pin_hash "$here/kwok")" "$here/kwok" "-s -w" sigs.k8s.io/kwok/cmd/kwok)
if [[ ! -s "$kwok_bin/stages.yaml" ]]; then
  kwok_src=$(cd "$here/kwok" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    echo "---"; cat "$kwok_src/kustomize/stage/$f.yaml"
  done > "$kwok_bin/stages.yaml.tmp"
  mv "$kwok_bin/stages.yaml.tmp" "$kwok_bin/stages.yaml"
fi

# replicatedhq/troubleshoot's support-bundle CLI, whose bundles `check --from` reads
# (tests/check.rs), with the build tags of its own Makefile (no cgo for container images).
TROUBLESHOOT_VERSION=$(mod_version "$here/troubleshoot" github.com/replicatedhq/troubleshoot)
troubleshoot_bin=$(GOTAGS_FOR_BUILD=netgo,containers_image_ostree_stub,exclude_graphdriver_devicemapper,exclude_graphdriver_btrfs,containers_image_openpgp \
  build_set troubleshoot "$TROUBLESHOOT_VERSION" "$(pin_hash "$here/troubleshoot")" "$here/troubleshoot" "-s -w" \
  github.com/replicatedhq/troubleshoot/cmd/troubleshoot)

# A leader-electing controller-runtime manager, as operators are built, for the lease tests.
ctrlrt_bin=$(build_set ctrlrt "$CTRLRT_VERSION" "$(pin_hash "$here/ctrlrt" "$here/ctrlrt/main.go")" "$here/ctrlrt" "-s -w" .)

# One directory to put on PATH, with the names the tools are known by.
bin="$cache_root/bin-$K8S_VERSION-$ETCD_VERSION-$KREW_VERSION-$KWOK_VERSION-$(pin_hash "$here/k8s" "$here"/k8s/elector/*.go "$here"/k8s/loader/*.go "$here"/k8s/floor/*.go "$here"/ctrlrt/main.go)"
mkdir -p "$bin"
for f in "$k8s_bin"/*; do ln -sf "$f" "$bin/"; done
ln -sf "$etcd_bin/server" "$bin/etcd"
ln -sf "$krew_bin/krew" "$bin/kubectl-krew"
ln -sf "$krew_bin/validate-krew-manifest" "$bin/validate-krew-manifest"
ln -sf "$elector_bin/elector" "$bin/coord-test-elector"
ln -sf "$loader_bin/loader" "$bin/coord-bench-loader"
ln -sf "$floor_bin/floor" "$bin/coord-bench-floor"
ln -sf "$toxiproxy_bin/server" "$bin/toxiproxy-server"
ln -sf "$kwok_bin/kwok" "$bin/kwok"
ln -sf "$ctrlrt_bin/ctrlrt" "$bin/coord-test-ctrlrt"
ln -sf "$kwok_bin/stages.yaml" "$bin/kwok-stages.yaml"
ln -sf "$troubleshoot_bin/troubleshoot" "$bin/support-bundle"

# Third-party operators for the real-cluster tests (tests/wild_operators.rs), each from a
# wrapper module that pins its release (and copies its go.mod's replace block): the real
# metrics-server behind its APIService, the KEDA operator and argo-rollouts' controller.
# Their CRDs and RBAC come from the same modules (up.sh --operators reads them from the
# module cache, found with `go list -m`).
if $with_operators; then
  ops=$here/operators
  MS_VERSION=$(mod_version "$ops/metrics-server" sigs.k8s.io/metrics-server)
  KEDA_VERSION=$(mod_version "$ops/keda" github.com/kedacore/keda/v2)
  ROLLOUTS_VERSION=$(mod_version "$ops/rollouts" github.com/argoproj/argo-rollouts)
  ms_bin=$(build_set metrics-server "$MS_VERSION" "$(pin_hash "$ops/metrics-server")" "$ops/metrics-server" "-s -w" \
    sigs.k8s.io/metrics-server/cmd/metrics-server)
  keda_bin=$(build_set keda "$KEDA_VERSION" "$(pin_hash "$ops/keda")" "$ops/keda" "-s -w" \
    github.com/kedacore/keda/v2/cmd/operator)
  # argo-rollouts v1.10 asks for go 1.26.10: the approved toolchain, for this build alone.
  rollouts_bin=$(GOTOOLCHAIN_FOR_BUILD=go1.27.3 build_set rollouts "$ROLLOUTS_VERSION" "$(pin_hash "$ops/rollouts")" \
    "$ops/rollouts" "-s -w" github.com/argoproj/argo-rollouts/cmd/rollouts-controller)
  ln -sf "$ms_bin/metrics-server" "$bin/metrics-server"
  ln -sf "$keda_bin/operator" "$bin/keda-operator"
  ln -sf "$rollouts_bin/rollouts-controller" "$bin/rollouts-controller"
  # Where each module's manifests (CRDs, RBAC) are, for up.sh: its copy in the module cache.
  module_dir() { (cd "$ops/$1" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' "$2"); }
  ln -sfn "$(module_dir metrics-server sigs.k8s.io/metrics-server)" "$bin/src-metrics-server"
  ln -sfn "$(module_dir keda github.com/kedacore/keda/v2)" "$bin/src-keda"
  ln -sfn "$(GOTOOLCHAIN=go1.27.3 module_dir rollouts github.com/argoproj/argo-rollouts)" "$bin/src-rollouts"
fi
# The benchmarks' peer for owners, from the copy in peers/ (see its SOURCE.md).
if $with_peers; then
  tree=$here/peers/kubectl-tree
  tree_bin=$(build_set kubectl-tree 552f016 "$(pin_hash "$tree" "$tree"/cmd/kubectl-tree/*.go)" "$tree" "-s -w" \
    ./cmd/kubectl-tree)
  ln -sf "$tree_bin/kubectl-tree" "$bin/kubectl-tree"
fi
echo "$bin"
