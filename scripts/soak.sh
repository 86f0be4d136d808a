#!/usr/bin/env bash
# A long watch under churn: `leases --watch -A` and `trace deploy/soak-web --watch` run for
# DURATION seconds against the local control plane while real leader elections take over
# (two controller-runtime managers competing for one Lease, the leader killed every 30 s)
# and a Deployment rolls (rollout restart every 20 s; kwok's nodes run its pods). Every 10 s
# the script samples each watch's resident memory, CPU time and open file descriptors into
# a CSV, and at the end checks that after a warm-up (the first 5 minutes, or a third of a
# shorter run) resident memory grew by at most 10% and descriptors not at all.
#
#   bash scripts/soak.sh [DURATION_SECONDS] [CLUSTER_DIR]     (default 1800; a new cluster)
#
# tests/run.sh runs a 3-minute version on its cluster; the 30-minute figures are in
# docs/safety.md. Writes target/soak/samples.csv and the watches' output beside it.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
duration=${1:-1800}
cluster=${2:-}
[[ $duration =~ ^[0-9]+$ ]] && (( duration >= 60 )) || { echo "usage: $0 [DURATION_SECONDS >= 60] [CLUSTER_DIR]" >&2; exit 2; }
log() { printf '[soak] %s\n' "$*" >&2; }
out=$root/target/soak
rm -rf "$out" && mkdir -p "$out"
pids=()
own_cluster=false
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if $own_cluster; then bash "$root/tests/cluster/down.sh" "$cluster"; fi
}
trap cleanup EXIT

plugin=$root/target/release/kubectl-coord
[[ -x $plugin ]] || (cd "$root" && cargo build --locked --release --bins) || exit 1
if [[ -z $cluster ]]; then
  cluster=$root/target/soak-cluster-$$
  own_cluster=true
  bash "$root/tests/cluster/up.sh" "$cluster" >/dev/null || { log "FAILED: the control plane did not come up"; exit 1; }
fi
export KUBECONFIG=$cluster/admin.kubeconfig
kubectl=$cluster/bin/kubectl
ns=coord-soak-$$
"$kubectl" create namespace "$ns" >/dev/null || exit 1
"$kubectl" apply -f - >/dev/null <<EOF || exit 1
apiVersion: apps/v1
kind: Deployment
metadata: {name: soak-web, namespace: $ns}
spec:
  replicas: 3
  selector: {matchLabels: {app: soak-web}}
  template:
    metadata: {labels: {app: soak-web}}
    spec: {containers: [{name: web, image: example.com/web:1}]}
EOF

# The watches, read as a user reads them (viewer rights).
KUBECONFIG=$cluster/viewer.kubeconfig NO_COLOR=1 "$plugin" leases --watch -A -o json \
  > "$out/leases.out" 2> "$out/leases.err" &
leases_pid=$!
KUBECONFIG=$cluster/viewer.kubeconfig NO_COLOR=1 "$plugin" trace deploy/soak-web -n "$ns" --watch --settle 24h -o json \
  > "$out/trace.out" 2> "$out/trace.err" &
trace_pid=$!
pids+=("$leases_pid" "$trace_pid")

# Churn: real elections (kill -9 one of two managers every 30 s, start it again) and rollouts.
elector() {
  "$cluster/bin/coord-test-ctrlrt" -kubeconfig "$cluster/admin.kubeconfig" -namespace "$ns" -lease soak-lock \
    > /dev/null 2>&1 &
  echo $!
}
electors=("$(elector)" "$(elector)")
pids+=("${electors[@]}")
churn() {
  local turn=0
  while true; do
    sleep 10
    turn=$((turn + 1))
    if (( turn % 2 == 0 )); then
      "$kubectl" -n "$ns" rollout restart deploy/soak-web >/dev/null 2>&1
    fi
    if (( turn % 3 == 0 )); then
      local i=$(( (turn / 3) % 2 ))
      kill -9 "${electors[$i]}" 2>/dev/null
      electors[$i]=$(elector)
      echo "${electors[$i]}" >> "$out/electors.pids"
    fi
  done
}
churn &
churn_pid=$!
pids+=("$churn_pid")

sample() { # sample NAME PID: epoch,name,rss_kb,cpu_ticks,fds
  local stat
  stat=$(cat "/proc/$2/stat" 2>/dev/null) || return 1
  local fields=(${stat##*) })
  printf '%s,%s,%s,%s,%s\n' "$(date +%s)" "$1" "$(awk '/VmRSS/ {print $2}' "/proc/$2/status")" \
    "$(( fields[11] + fields[12] ))" "$(ls "/proc/$2/fd" | wc -l)"
}
echo "epoch,watch,rss_kb,cpu_ticks,fds" > "$out/samples.csv"
log "watching for ${duration}s under churn (samples in $out/samples.csv)"
end=$((SECONDS + duration))
while (( SECONDS < end )); do
  for w in leases:$leases_pid trace:$trace_pid; do
    sample "${w%%:*}" "${w##*:}" >> "$out/samples.csv" || { log "FAILED: the ${w%%:*} watch exited early:"; cat "$out/${w%%:*}.err" >&2; exit 1; }
  done
  sleep 10
done
kill "$churn_pid" 2>/dev/null
while read -r p; do kill -9 "$p" 2>/dev/null; done < <(cat "$out/electors.pids" 2>/dev/null; printf '%s\n' "${electors[@]}")

# Judge: after the warm-up, RSS within 10% of its value then, descriptors never above it.
warmup=$(( duration / 3 < 300 ? duration / 3 : 300 ))
status=0
for w in leases trace; do
  verdict=$(awk -F, -v w="$w" -v warm="$warmup" '
    NR == 1 { next }
    $2 == w && !t0 { t0 = $1 }
    $2 == w && $1 - t0 >= warm && !base { base = $3; fds = $5 }
    $2 == w && base { if ($3 > max) max = $3; if ($5 > maxfd) maxfd = $5; last = $3; cpu = $4 }
    END {
      grow = (max - base) * 100 / base
      printf "%s: RSS %d kB after warm-up, max %d kB (%+.1f%%), last %d kB; fds %d, max %d; CPU %.1f s\n", w, base, max, grow, last, fds, maxfd, cpu / 100
      exit (grow > 10 || maxfd > fds) ? 1 : 0
    }' "$out/samples.csv")
  rc=$?
  log "$verdict"
  (( rc == 0 )) || { log "FAILED: $w grew past 10% RSS or opened descriptors after the warm-up"; status=1; }
done
# The watches saw the churn: elections taking over and the rollouts' ReplicaSets.
changed=$(grep -c '"leader-changed"' "$out/leases.out")
created=$(grep -c '"what":"created"' "$out/trace.out")
log "leases --watch printed $changed leader changes; trace --watch $created creations"
(( changed >= 1 && created >= 1 )) || { log "FAILED: the watches did not see the churn"; status=1; }
grep -v '^$' "$out/leases.err" "$out/trace.err" >&2 && { log "FAILED: a watch wrote to stderr"; status=1; }
exit $status
