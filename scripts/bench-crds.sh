# Sourced by scripts/bench.sh --crds N (it defines the cluster, $bin, $coord, $admin, $work,
# $runs, time_runs, median, ratio, restart_apiserver and start_wan): a cluster serving many
# types. One small namespace (20 Deployments of 5 pods, leases, PDBs, widgets); owners of one
# Deployment is timed on loopback before the CRDs are added; then N namespaced CRDs
# (tests/cluster/crds.sh), ten custom resources in each of five of them owned by that
# Deployment, and owners, check -A and trace timed on loopback and then through the WAN link,
# with kubectl-tree (tests/cluster/peers) beside owners. Writes the "Many types" section of
# docs/benchmarks-wan.md.

# physical_limit TRACE RTT_S: what no client can beat for the requests in TRACE, in seconds:
# the round trips the answer depends on, one after the other, times RTT, plus every response
# body's bytes over the link (100 Mbit/s). The round trips: TCP and TLS (two), discovery
# (one, when asked for), the longest chain of pages of one list (each needs the token of the
# page before), and one more when single objects were read after the lists (owners' status
# column, trace's full objects and Events). The namespace check goes beside the lists.
# Prints that limit, then those round trips other than the pages': the ones no list's work
# on the server can overlap, since they come before the lists or wait on their answers.
physical_limit() {
  awk -F'\t' -v rtt="$2" -v bandwidth=12500000 '
    $1 != "GET" { next }
    {
      path = $3
      if ($5 ~ /^[0-9]+$/) bytes += $5
      if (path ~ /^\/apis?(\?|$)/) { discovery = 1; next }
      if (path ~ /[?&]limit=/) {
        key = path
        gsub(/continue=[^&]*/, "", key); gsub(/\?&/, "?", key); gsub(/&&/, "\\&", key); sub(/[?&]$/, "", key)
        chain[key]++
        next
      }
      if (path ~ /^\/api\/v1\/namespaces\/[^\/?]+$/) next
      follow = 1
    }
    END {
      longest = 0
      for (k in chain) if (chain[k] > longest) longest = chain[k]
      printf "%.3f %d\n", (2 + discovery + longest + follow) * rtt + bytes / bandwidth, 2 + discovery + follow
    }' "$1"
}

crd_rows=()
# ticks PID: the user and system CPU time of process PID so far, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# seconds TICKS: clock ticks as seconds, two decimals.
seconds() { awk -v t="$1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}'; }

# crd_row LINK CRDS PEER_CMD|- -- COORD_ARGS...: one row; the peer (kubectl-tree) alternates
# with ours, each run right after a collection of the API server's heap.
crd_row() {
  local link_name=$1 n=$2 peer=$3; shift 4
  log "$link_name, $n CRDs: $*"
  restart_apiserver
  local trace="$work/trace"
  rm -f "$trace"
  KUBECTL_COORD_TRACE="$trace" "$coord" "$@" >/dev/null 2>&1
  : > "$work/ours"; : > "$work/peer"
  for ((i = 0; i < runs; i++)); do
    time_runs "$work/ours" 1 "$coord" "$@"
    [[ $peer == - ]] || time_runs "$work/peer" 1 bash -c "$peer"
  done
  # CPU time over one more run of ours, after the timed ones: not the first run after the
  # restart, which pays for the server's warm-up with 300 CRDs (3 s of CPU), nor a timed one,
  # whose forced collection is CPU too. The API server's, etcd's, the proxy's (over WAN) and
  # ours: every process that works for the run, all on the same cores.
  local pids=("$(cat "$dir/pids/kube-apiserver.pid")" "$(cat "$dir/pids/etcd.pid")") before=() p k
  [[ $link_name == WAN ]] && pids+=("$toxi_pid")
  for p in "${pids[@]}"; do before+=("$(ticks "$p")"); done
  # The shell's children's times once the run is waited for: ours.
  local ours_ticks server_ticks=0 all_ticks
  ours_ticks=$(bash -c '"$@" >/dev/null 2>&1; awk "{print \$16 + \$17}" /proc/$$/stat' _ "$coord" "$@")
  all_ticks=$ours_ticks
  for k in "${!pids[@]}"; do
    p=$(($(ticks "${pids[k]}") - before[k]))
    ((k == 0)) && server_ticks=$p
    all_ticks=$((all_ticks + p))
  done
  local ours requests throttled mb limit peer_s="-" peer_ratio="-" rtt=0 cpu_bound
  ours=$(median "$work/ours" 1)
  requests=$(grep -c '^GET' "$trace")
  # The HTTP status is the trace's last field.
  throttled=$(awk -F'\t' '$NF == "429"' "$trace" | wc -l)
  mb=$(awk -F'\t' '$1 == "GET" && $5 ~ /^[0-9]+$/ {b += $5} END {printf "%.2f", b / 1048576}' "$trace")
  [[ $link_name == WAN ]] && rtt=0.040
  local serial
  read -r limit serial < <(physical_limit "$trace" "$rtt")
  # What these requests cost this machine at the least: the CPU time above over its cores, plus
  # the round trips no list's work can overlap (see physical_limit).
  cpu_bound=$(awk -v t="$all_ticks" -v hz="$(getconf CLK_TCK)" -v cores="$(nproc)" -v rtt="$rtt" -v serial="$serial" \
    'BEGIN {printf "%.3f", serial * rtt + t / hz / cores}')
  if [[ $peer != - ]]; then
    peer_s=$(median "$work/peer" 1); peer_ratio=$(ratio "$peer_s" "$ours")
  fi
  crd_rows+=("| \`kubectl coord $*\` | $link_name | $n | $requests | $throttled | $mb | $ours | $(seconds "$server_ticks") | $(seconds "$all_ticks") | $cpu_bound | $limit | $(ratio "$ours" "$limit") | $peer_s | $peer_ratio |")
}

many_types() {
  local ns=crds target=app-00001 tree
  tree="$(bash tests/cluster/build.sh --peers)/kubectl-tree"
  log "loading $ns"
  "$bin/coord-bench-loader" -kubeconfig "$admin" -namespace "$ns" -deployments 20 -pods-per-rs 5 -leases 20 \
    -node-leases 0 -pdbs 5 -widgets 20 | tee "$work/load-$ns.txt" >&2
  local peer="$tree deployment $target -n $ns"
  crd_row loopback 0 "$peer" -- owners "deploy/$target" -n "$ns"

  log "adding $crds CRDs"
  bash tests/cluster/crds.sh "$crds" | "$bin/kubectl" --kubeconfig "$admin" apply -f - >/dev/null
  "$bin/kubectl" --kubeconfig "$admin" wait --for=condition=Established crd --all --timeout=600s >/dev/null
  local uid group i j
  uid=$("$bin/kubectl" --kubeconfig "$admin" -n "$ns" get deploy "$target" -o jsonpath='{.metadata.uid}')
  for ((i = 0; i < 5; i++)); do
    group=$(printf 'g%02d.crds.coord.test' $((i * crds / 50)))
    for ((j = 0; j < 10; j++)); do
      printf -- '---\napiVersion: %s/v1\nkind: Kind0%d\nmetadata:\n  name: cr-%d\n  namespace: %s\n  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: %s, uid: "%s"}]\n' \
        "$group" "$i" "$j" "$ns" "$target" "$uid"
    done
  done > "$work/crs.yaml"
  # Discovery may lag the Established condition by a moment.
  until "$bin/kubectl" --kubeconfig "$admin" apply -f "$work/crs.yaml" >/dev/null 2>&1; do sleep 1; done

  crd_row loopback "$crds" "$peer" -- owners "deploy/$target" -n "$ns"
  crd_row loopback "$crds" - -- check -A
  crd_row loopback "$crds" - -- trace "deploy/$target" -n "$ns"
  start_wan
  crd_row WAN "$crds" "$peer" -- owners "deploy/$target" -n "$ns"
  crd_row WAN "$crds" - -- check -A
  crd_row WAN "$crds" - -- trace "deploy/$target" -n "$ns"
  kill "$toxi_pid" 2>/dev/null || true

  local section="$work/many-types.md" out=docs/benchmarks-wan.md
  {
    echo "## Many types"
    echo
    echo "Generated by \`bash scripts/bench.sh --crds $crds --runs $runs\` on $(date -u +%Y-%m-%d); machine: $(nproc) cores."
    echo "A namespace \`$ns\` (tests/cluster/k8s/loader: 20 Deployments of 5 pods, 20 Leases, 5 PDBs, 20 widgets;"
    echo "$(tail -n1 "$work/load-$ns.txt")), then $crds namespaced CRDs (tests/cluster/crds.sh: $((crds / 10)) groups of ten) and ten custom"
    echo "resources in each of five of them, owned by deploy/$target. **WAN**: through toxiproxy, 20 ms and"
    echo "100 Mbit/s each way, as above; as viewer, a user API Priority and Fairness does not exempt."
    echo "**429s**: answers the server throttled, from our request trace. **limit**: the physical limit"
    echo "of our requests: the round trips the answer depends on one after the other (TCP and TLS,"
    echo "discovery, the longest chain of pages of one list, and one more for the single objects read"
    echo "after the lists) times the round trip (40 ms over WAN, nothing on loopback), plus every"
    echo "response body over 100 Mbit/s. **server CPU**: the API server's CPU time over one more run"
    echo "of ours, after the timed ones. **CPU**: the same run's CPU time in every process that works"
    echo "for it: the API server, etcd, toxiproxy (WAN) and ours. **CPU bound**: that time over the"
    echo "machine's $(nproc) cores, which they share, plus the round trips no list's work on the server can"
    echo "overlap (TCP, TLS, discovery, and the single objects read after the lists): what these"
    echo "requests cost this machine at the least (the few milliseconds of CPU spent during those"
    echo "round trips are counted twice)."
    echo "**kubectl-tree**: ahmetb/kubectl-tree at 552f016, built from"
    echo "tests/cluster/peers; peer ratio = kubectl-tree / ours (above 1: we are faster). Medians of"
    echo "$runs runs, ours and the peer alternating, each row against an API server started afresh."
    echo
    echo "| command | link | CRDs | requests | 429s | MB | ours (s) | server CPU (s) | CPU (s) | CPU bound (s) | limit (s) | ours / limit | kubectl-tree (s) | peer ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${crd_rows[@]}"
  } > "$section"
  # The rest of benchmarks-wan.md (bench.sh --link wan) is kept; this section is replaced.
  awk '/^## Many types/ { exit } { print }' "$out" > "$work/wan-kept.md"
  { cat "$work/wan-kept.md"; echo; cat "$section"; } > "$out"
  log "wrote the Many types section of $out"
  cat "$section"
}
