#!/usr/bin/env bash
# The one command that runs every test on a fresh machine:
#   bash tests/run.sh
# Builds (and caches) the upstream control plane if missing, starts a local
# cluster, lints the workflows, runs the unit, property and integration tests and the krew packaging
# check, stops the cluster even when tests fail, and exits with the tests' status.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
log() { printf '[tests] %s\n' "$*" >&2; }

command -v cargo >/dev/null || { log "FAILED: cargo is not installed"; exit 1; }
cluster_dir="$root/target/test-cluster-$$"
# A second control plane beside the first, for the fleet tests (tests/fleet.rs), with
# coordinated leader election on (tests/coordinated.rs).
cluster2_dir="$root/target/test-cluster-$$-b"
# A third, kept healthy, that runs real third-party operators (tests/operators.rs): what
# check says there must be true of a cluster nobody broke on purpose.
cluster3_dir="$root/target/test-cluster-$$-c"
cleanup() {
  for d in "$cluster_dir" "$cluster2_dir" "$cluster3_dir"; do bash "$root/tests/cluster/down.sh" "$d"; done
}
trap cleanup EXIT

# From Debian's packages: real proxy servers for tests/network.rs (binaries only: no
# service is started). A missing one fails the run rather than skipping its tests.
missing=()
command -v tinyproxy >/dev/null || missing+=(tinyproxy-bin)
command -v microsocks >/dev/null || missing+=(microsocks)
# actionlint checks each workflow's shell steps with shellcheck when it is installed.
command -v shellcheck >/dev/null || missing+=(shellcheck)
# jq gives tests/history.rs its expected figures, counted apart from the code under test.
command -v jq >/dev/null || missing+=(jq)
# objdump reads the glibc versions the packed binary needs (scripts/krew-check.sh).
command -v objdump >/dev/null || missing+=(binutils)
if (( ${#missing[@]} )); then
  log "installing ${missing[*]} from Debian"
  # As root here; through sudo on a hosted runner.
  sudo=(); (( EUID == 0 )) || sudo=(sudo)
  { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
    || { log "FAILED: could not install ${missing[*]} from Debian"; exit 1; }
fi

log "actionlint over the workflows"
bash scripts/actionlint.sh || { log "FAILED: actionlint"; exit 1; }

log "building the plugin and the tests"
cargo build --locked --release --bins || exit 1
cargo test --locked --no-run || exit 1

log "starting the local control plane in $cluster_dir"
# Continue pages from etcd rather than the watch cache's snapshots: after a compaction
# an old continue token then answers 410, which tests/pagination.rs needs.
export COORD_APISERVER_FLAGS="--feature-gates=ListFromCacheSnapshot=false"
if ! bash tests/cluster/up.sh "$cluster_dir" >/dev/null; then
  log "FAILED: the local control plane did not come up (see the lines above)"
  exit 1
fi
log "starting a second control plane (coordinated leader election) in $cluster2_dir"
# Its audit log keeps the bodies of what controllers share (tests/history.rs reads it).
if ! bash tests/cluster/up.sh "$cluster2_dir" --coordinated --audit-policy detailed >/dev/null; then
  log "FAILED: the second control plane did not come up (see the lines above)"
  exit 1
fi
log "starting a third control plane with real operators (metrics-server, KEDA, argo-rollouts) in $cluster3_dir"
# Its audit log keeps those bodies without managedFields (tests/history.rs: KEDA's fight).
if ! (unset COORD_APISERVER_FLAGS; bash tests/cluster/up.sh "$cluster3_dir" --operators --audit-policy detailed-no-fields >/dev/null); then
  log "FAILED: the operators' control plane did not come up (see the lines above)"
  exit 1
fi
export COORD_TEST_CLUSTER=$cluster_dir COORD_TEST_CLUSTER_2=$cluster2_dir COORD_TEST_CLUSTER_3=$cluster3_dir

status=0
log "cargo test (unit, property and integration tests)"
# --no-fail-fast: one failing test binary must not hide the rest (nor starve the
# audit check below of the requests it reads).
cargo test --locked --no-fail-fast -- --test-threads 4 || status=1
# Last, as they disturb a cluster: kube-apiserver restarts on the second (tests/restarts.rs,
# ignored in the run above), and beside them a 3-minute soak of the watches under churn on
# the first (scripts/soak.sh; the 30-minute figures are in docs/safety.md).
log "watches across API server restarts (second cluster) and a 3-minute soak (first cluster)"
bash scripts/soak.sh 180 "$cluster_dir" &
soak=$!
cargo test --locked --test restarts -- --ignored || status=1
wait "$soak" || { log "the soak failed (target/soak holds its samples and output)"; status=1; }
log "read-only check over the audit log of the whole run"
cargo test --locked --test audit || status=1
log "krew: package for glibc 2.17, check its size and glibc symbols, validate, install offline, run through kubectl"
bash scripts/krew-check.sh "$cluster_dir" || status=1
if (( status == 0 )); then log "all tests passed"; else log "SOME TESTS FAILED"; fi
exit $status
