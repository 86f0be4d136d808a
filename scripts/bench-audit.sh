#!/usr/bin/env bash
# The audit log's benchmarks (bash scripts/bench.sh --audit [--runs N], or this script alone):
# history --findings over logs written by the real API server, beside the floor (the same
# gzip decoder alone) and the peers people use today (jq from Debian; OpenShift's
# kubectl-dev_tool audit, built from its repository when a copy is at $COORD_DEV_TOOL_SRC).
#
# The log: a cluster from tests/cluster/up.sh with --audit-policy metadata and every
# controller on; 100 Deployments of 10 pods applied, rolled out twice (the real Deployment and
# ReplicaSet controllers, scheduler and kwok's stages make the churn), Leases, PDBs and custom
# resources from tests/cluster's loader, then two minutes of node-lease renewals. Its files
# are joined into .bench/audit/seed.log (kept between runs; delete it for a new one).
#
# The long logs are the seed repeated, each copy a day later (its events' times shifted, so
# no copy is a duplicate of another): same.log repeats the same objects (what a log of a
# steady cluster looks like: many writes, the same objects), new.log renames every copy's
# namespaces (the objects grow with the log: the worst case for memory). Both are ~5 GB.
#
# Writes docs/benchmarks-audit.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=5 target_mb=${COORD_AUDIT_BENCH_MB:-5000}
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N]" >&2; exit 2 ;;
  esac
done
log() { printf '[bench-audit] %s\n' "$*" >&2; }
dir="$root/.bench/audit"
mkdir -p "$dir"
cargo build --locked --release --bins >&2
coord="$root/target/release/kubectl-coord"
CARGO_TARGET_DIR="$root/.bench/target" cargo build --release --quiet \
  --manifest-path scripts/bench-gunzip/Cargo.toml >&2
gunzip_rs="$root/.bench/target/release/bench-gunzip"

seed="$dir/seed.log"
if [[ ! -s $seed ]]; then
  cluster="$dir/cluster"
  bash tests/cluster/down.sh "$cluster" >/dev/null 2>&1 || true
  rm -rf "$cluster"
  log "starting a cluster with a Metadata-level audit log"
  bash tests/cluster/up.sh "$cluster" --nodes 100 --audit-policy metadata >/dev/null
  trap 'bash tests/cluster/down.sh "$cluster" >/dev/null 2>&1 || true' EXIT
  k() { "$cluster/bin/kubectl" --kubeconfig "$cluster/admin.kubeconfig" "$@"; }
  k create namespace bench-a >/dev/null
  log "loading leases, budgets and custom resources"
  "$cluster/bin/coord-bench-loader" -kubeconfig "$cluster/admin.kubeconfig" -namespace bench-a \
    -deployments 0 -leases 500 -node-leases 0 -pdbs 50 -widgets 500 >&2
  log "applying 100 Deployments of 10 pods"
  for i in $(seq 1 100); do
    cat <<EOF
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-$i, namespace: bench-a}
spec:
  replicas: 10
  selector: {matchLabels: {app: web-$i}}
  template:
    metadata: {labels: {app: web-$i}}
    spec: {containers: [{name: c, image: example.com/web}]}
EOF
  done | k apply -f - >/dev/null
  wait_rolled_out() {
    local deadline=$((SECONDS + 900))
    until k rollout status deploy -n bench-a --timeout 10s >/dev/null 2>&1; do
      ((SECONDS < deadline)) || { log "rollout did not finish"; exit 1; }
    done
  }
  wait_rolled_out
  for round in 1 2; do
    log "rollout $round"
    k rollout restart deploy -n bench-a >/dev/null
    sleep 5
    wait_rolled_out
  done
  log "two minutes of lease renewals"
  sleep 120
  # Rotated files first (their names sort by time), the live one last; down.sh removes them.
  kill -STOP "$(cat "$cluster/pids/kube-apiserver.pid")"
  cat $(ls "$cluster"/audit-*.log 2>/dev/null | sort) "$cluster/audit.log" > "$seed.part"
  kill -CONT "$(cat "$cluster/pids/kube-apiserver.pid")"
  bash tests/cluster/down.sh "$cluster" >/dev/null
  trap - EXIT
  # The last line may be cut short (written while stopped): history skips and counts it.
  mv "$seed.part" "$seed"
fi
seed_mb=$(($(stat -c %s "$seed") / 1000000))
((seed_mb > 0)) || { log "the seed log is empty"; exit 1; }

# repeat OUT RENAME [MB]: the seed, each copy a day later, to about MB (default $target_mb);
# RENAME=1 also renames the copy's namespaces (NS -> NS-cK).
repeat() {
  local out=$1 rename=$2 mb=${3:-$target_mb} day copies k
  [[ -s $out ]] && return
  day=$(head -c 4096 "$seed" | grep -o '"stageTimestamp":"[0-9-]*' | head -1 | cut -d'"' -f4)
  if [[ $(tail -c 4096 "$seed" | grep -o '"stageTimestamp":"[0-9-]*' | tail -1 | cut -d'"' -f4) != "$day" ]]; then
    log "the seed log spans midnight: its copies cannot be shifted by whole days"; exit 1
  fi
  copies=$(((mb + seed_mb - 1) / seed_mb))
  log "writing $out: $copies copies of the seed"
  for ((k = 0; k < copies; k++)); do
    local to
    to=$(date -u -d "$day + $k days" +%F)
    if ((rename)); then
      sed -e "s/\"$day\\T/\"${to}T/g" -e "s/\"namespace\":\"\\([^\"]*\\)\"/\"namespace\":\"\\1-c$k\"/g" "$seed"
    else
      sed -e "s/\"$day\\T/\"${to}T/g" "$seed"
    fi
  done > "$out.part"
  mv "$out.part" "$out"
}
repeat "$dir/same.log" 0
repeat "$dir/new.log" 1
repeat "$dir/gb.log" 0 1000
[[ -s $seed.gz ]] || gzip -c "$seed" > "$seed.gz"

# time_one CMD...: "seconds kilobytes" of one run, output to /dev/null (CMD may be one of the
# exported functions below; the kilobytes are the largest process's).
time_one() {
  /usr/bin/time -f '%e %M' -o "$dir/time.txt" bash -c '"$@"' _ "$@" > /dev/null 2> "$dir/stderr.txt" ||
    { log "failed: $*"; cat "$dir/stderr.txt" >&2; exit 1; }
  cat "$dir/time.txt"
}
# median_of N CMD...: the median run's "seconds kilobytes" (by seconds) of N runs.
median_of() {
  local n=$1; shift
  for ((i = 0; i < n; i++)); do time_one "$@"; done | sort -n | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'
}
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / 1e6 / s }'; }
size_of() { stat -c %s "$1"; }

findings() { "$coord" history --findings --audit-log "$@" -o json; }
export -f findings
export coord
cat "$seed" > /dev/null # into the page cache, like every file after its first run

log "history --findings on the seed, the long logs and the gzip seed"
read -r seed_s seed_kb < <(median_of "$runs" findings "$seed")
read -r same_s same_kb < <(median_of 1 findings "$dir/same.log")
read -r new_s new_kb < <(median_of 1 findings "$dir/new.log")
read -r gz_s gz_kb < <(median_of "$runs" findings "$seed.gz")
read -r gunzip_s gunzip_kb < <(median_of "$runs" "$gunzip_rs" "$seed.gz")

# The same answers, side by side. 409s per user (the conflicts at --conflict-min 1, summed
# per user), and the writes to the busiest Deployment (their audit IDs).
WRITE='.stage == "ResponseComplete" and (.verb | IN("create","update","patch","delete","deletecollection")) and ((.requestURI | test("dryRun=")) | not) and .objectRef.resource != "events" and (.objectRef.name // "") != ""'
jq_409() { jq -r "select($WRITE and .responseStatus.code == 409) | .user.username" "$1" | sort | uniq -c | sort -k2; }
ours_409() {
  "$coord" history --findings --conflict-min 1 --audit-log "$1" -o json |
    jq -r '.conflicts | group_by(.user)[] | "\(map(.refused) | add) \(.[0].user)"' | sort -k2
}
busiest=$(jq -r "select($WRITE and .objectRef.resource == \"deployments\") | \"\(.objectRef.namespace)/\(.objectRef.name)\"" "$seed" |
  sort | uniq -c | sort -rn | head -1 | awk '{ print $2 }')
ns=${busiest%/*} name=${busiest#*/}
jq_object() {
  jq -r --arg ns "$ns" --arg name "$name" \
    "select($WRITE and .objectRef.resource == \"deployments\" and .objectRef.namespace == \$ns and .objectRef.name == \$name) | .auditID" "$1" |
    sort
}
ours_object() {
  "$coord" history deployments/"$name" -n "$ns" --audit-log "$1" -o json | jq -r '.writes[].auditId' | sort
}
export -f jq_409 ours_409 jq_object ours_object
export WRITE ns name
same_409=yes same_object=yes
[[ $(jq_409 "$seed" | awk '{ print $1, $2 }') == "$(ours_409 "$seed" | awk '{ print $1, $2 }')" ]] || same_409=NO
[[ $(jq_object "$seed") == "$(ours_object "$seed")" ]] || same_object=NO
log "409s per user: $same_409 the same; $busiest's writes (by audit ID): $same_object the same"
read -r jq409_s jq409_kb < <(median_of "$runs" jq_409 "$seed")
read -r ours409_s ours409_kb < <(median_of "$runs" ours_409 "$seed")
read -r jqobj_s jqobj_kb < <(median_of "$runs" jq_object "$seed")
read -r oursobj_s oursobj_kb < <(median_of "$runs" ours_object "$seed")

# The same queries on a 1 GB log (one run each): the fixed costs of a start no longer count.
read -r jq409_gb_s _ < <(median_of 1 jq_409 "$dir/gb.log")
read -r ours409_gb_s _ < <(median_of 1 ours_409 "$dir/gb.log")
same_409_gb=yes
[[ $(jq_409 "$dir/gb.log" | awk '{ print $1, $2 }') == "$(ours_409 "$dir/gb.log" | awk '{ print $1, $2 }')" ]] || same_409_gb=NO

# OpenShift's kubectl-dev_tool: its module is not served by the proxy; built from a copy of
# its repository (vendored dependencies) when one is given.
dev_tool_row="| kubectl-dev_tool audit | not built: set COORD_DEV_TOOL_SRC to a copy of github.com/openshift/cluster-debug-tools | | |"
dev_tool_obj_row=""
if [[ -d ${COORD_DEV_TOOL_SRC:-} ]]; then
  dev_tool="$root/.bench/kubectl-dev_tool"
  [[ -x $dev_tool ]] || (cd "$COORD_DEV_TOOL_SRC" && GOFLAGS=-mod=vendor go build -o "$dev_tool" ./cmd/kubectl-dev_tool) >&2
  dev_409() { "$dev_tool" audit -f "$1" --http-status-code=409 --stage=ResponseComplete -o top --by=user; }
  dev_object() { "$dev_tool" audit -f "$1" --resource=deployments.apps -n "$ns" --name="$name" --stage=ResponseComplete --verb=create,update,patch,delete; }
  export -f dev_409 dev_object
  export dev_tool
  read -r dev409_s dev409_kb < <(median_of "$runs" dev_409 "$seed")
  read -r devobj_s devobj_kb < <(median_of "$runs" dev_object "$seed")
  dev_tool_row="| kubectl-dev_tool audit --http-status-code=409 -o top --by=user | $dev409_s | $((dev409_kb / 1024)) | $(awk -v a="$dev409_s" -v b="$ours409_s" 'BEGIN { printf "%.1fx", a / b }') |"
  dev_tool_obj_row="| kubectl-dev_tool audit --resource=deployments.apps -n NS --name=NAME | $devobj_s | $((devobj_kb / 1024)) | $(awk -v a="$devobj_s" -v b="$oursobj_s" 'BEGIN { printf "%.1fx", a / b }') |"
fi

seed_objects=$(findings "$seed" | jq '[.objectsWritten[]] | add // 0')
new_objects=$(findings "$dir/new.log" | jq '[.objectsWritten[]] | add // 0')
same_objects=$(findings "$dir/same.log" | jq '[.objectsWritten[]] | add // 0')
cores=$(nproc)
{
  echo "# Benchmarks: the audit log"
  echo
  echo "Written by \`bash scripts/bench.sh --audit\` (scripts/bench-audit.sh) on $(date -u +%F), $cores cores;"
  echo "medians of $runs runs (one run on the long logs), files in the page cache. The seed log is"
  echo "the real API server's at Metadata level while the real controllers rolled out 100"
  echo "Deployments of 10 kwok pods twice; the long logs repeat it a day apart (same.log: the"
  echo "same objects; new.log: every copy's namespaces renamed, so objects grow with the log)."
  echo
  echo "## history --findings"
  echo
  echo "| log | size | objects written | time (s) | MB/s | peak RSS (MB) |"
  echo "|---|---|---|---|---|---|"
  echo "| seed.log | $seed_mb MB | $seed_objects | $seed_s | $(mbps "$(size_of "$seed")" "$seed_s") | $((seed_kb / 1024)) |"
  echo "| same.log | $(($(size_of "$dir/same.log") / 1000000)) MB | $same_objects | $same_s | $(mbps "$(size_of "$dir/same.log")" "$same_s") | $((same_kb / 1024)) |"
  echo "| new.log | $(($(size_of "$dir/new.log") / 1000000)) MB | $new_objects | $new_s | $(mbps "$(size_of "$dir/new.log")" "$new_s") | $((new_kb / 1024)) |"
  echo "| seed.log.gz | $(($(size_of "$seed.gz") / 1000000)) MB | $seed_objects | $gz_s | $(mbps "$(size_of "$seed")" "$gz_s") (uncompressed) | $((gz_kb / 1024)) |"
  echo "| floor: bench-gunzip seed.log.gz (flate2 + zlib-rs alone) | | | $gunzip_s | $(mbps "$(size_of "$seed")" "$gunzip_s") | $((gunzip_kb / 1024)) |"
  echo
  echo "gzip: $(awk -v a="$gz_s" -v b="$seed_s" 'BEGIN { printf "%.2fx", a / b }') the time of the same log uncompressed, and"
  echo "$(awk -v a="$gz_s" -v b="$gunzip_s" 'BEGIN { printf "%.2fx", a / b }') the time to decompress the file alone: the log compresses"
  echo "$(awk -v a="$(size_of "$seed")" -v b="$(size_of "$seed.gz")" 'BEGIN { printf "%.0f", a / b }'):1, so decompressing it is"
  echo "faster than reading its events, and the reader decompresses on one thread while others parse."
  echo
  echo "## Beside the peers, same answers"
  echo
  echo "On seed.log. 409s per user: the same counts as jq's: $same_409. The writes to the busiest"
  echo "Deployment ($busiest), by audit ID: the same as jq's: $same_object."
  echo
  echo "| query | time (s) | peak RSS (MB) | ours faster |"
  echo "|---|---|---|---|"
  echo "| ours: history --findings --conflict-min 1, summed per user | $ours409_s | $((ours409_kb / 1024)) | |"
  echo "| jq: 409s per user | $jq409_s | $((jq409_kb / 1024)) | $(awk -v a="$jq409_s" -v b="$ours409_s" 'BEGIN { printf "%.1fx", a / b }') |"
  echo "$dev_tool_row"
  echo "| ours: history deployments/NAME -n NS | $oursobj_s | $((oursobj_kb / 1024)) | |"
  echo "| jq: one object's writes | $jqobj_s | $((jqobj_kb / 1024)) | $(awk -v a="$jqobj_s" -v b="$oursobj_s" 'BEGIN { printf "%.1fx", a / b }') |"
  [[ -n $dev_tool_obj_row ]] && echo "$dev_tool_obj_row"
  echo
  echo "On gb.log ($(($(size_of "$dir/gb.log") / 1000000)) MB, the seed repeated; one run each; the same counts: $same_409_gb):"
  echo
  echo "| query | time (s) | ours faster |"
  echo "|---|---|---|"
  echo "| ours: history --findings --conflict-min 1, summed per user | $ours409_gb_s | |"
  echo "| jq: 409s per user | $jq409_gb_s | $(awk -v a="$jq409_gb_s" -v b="$ours409_gb_s" 'BEGIN { printf "%.1fx", a / b }') |"
  echo
} > docs/benchmarks-audit.md
log "wrote docs/benchmarks-audit.md"
cat docs/benchmarks-audit.md
