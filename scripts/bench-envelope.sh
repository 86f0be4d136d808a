# Sourced by scripts/bench.sh --scale envelope (it defines the cluster, $bin, $coord,
# $admin, $work, $runs, $fraction, $up_seconds, bench() and rows): the upstream
# scalability envelope. 5,000 kwok nodes with the kubelet's 40 s heartbeat leases; two
# namespaces env-a and env-b, each with 5,000 Deployments and their ReplicaSets (15
# pods each, bound round-robin to the nodes and taken to Running by kwok), 2,500
# Leases, 500 PDBs and 2,500 custom resources each owning a ConfigMap: 150,000 pods
# in all. The scan commands run -A after the first half and again after the second,
# to show cost growing linearly; the one-object commands at full size. Writes
# docs/benchmarks-envelope.md and the same table into docs/benchmarks.md.

envelope_size() { awk -v n="$1" -v f="$fraction" 'BEGIN { n = int(n * f); print (n < 1 ? 1 : n) }'; }

# The control plane's peak resident memory (VmHWM), MB per process and in all.
control_plane_memory() {
  local total=0 parts=()
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
    local pid kb
    pid=$(cat "$dir/pids/$name.pid" 2>/dev/null) || continue
    kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    [[ -n $kb ]] || continue
    parts+=("$name $((kb / 1024))")
    total=$((total + kb / 1024))
  done
  echo "$(IFS=,; echo "${parts[*]}" | sed 's/,/, /g'); in all $total MB"
}

# Pods Running: all pods less those not Running. The total comes from one page's
# remainingItemCount; the rest are listed (a field selector rules out that count), but
# they are few once kwok keeps up. Listing the Running pods instead, with `kubectl get -o name`,
# took kubectl over 4 minutes and 6.8 GB at 150,000 pods, and the API server's time with it.
running_pods() {
  local all pending
  all=$(pods_total) || return 1
  pending=$(count_pages "/api/v1/pods?fieldSelector=status.phase%21%3DRunning") || return 1
  echo $((all - pending))
}

# pods_total: every pod in the cluster, from the first page of a list with no selector
# (the server counts the rest as remainingItemCount).
pods_total() {
  raw "/api/v1/pods?limit=1" | jq -e '(.items | length) + (.metadata.remainingItemCount // 0)'
}

# count_pages PATH?QUERY: the items of a list read page by page (5,000 each), without
# keeping them: kubectl get --raw copies each page out undecoded.
count_pages() {
  local path=$1 token="" n=0 page_items
  while :; do
    read -r page_items token < <(raw "$path&limit=5000${token:+&continue=$token}" |
      jq -r '"\(.items | length) \(.metadata.continue // "")"') || return 1
    [[ $page_items =~ ^[0-9]+$ ]] || return 1
    n=$((n + page_items))
    [[ -z $token ]] && break
  done
  echo "$n"
}

# raw PATH: one GET through kubectl; a failure is logged and fails the pipeline.
raw() {
  "$bin/kubectl" --kubeconfig "$admin" get --raw "$1" 2>"$work/raw.err" ||
    { log "kubectl get --raw $1 failed: $(tail -n1 "$work/raw.err")"; return 1; }
}

# count ARGS...: how many objects `kubectl get ARGS -o name` lists. A failed list prints
# kubectl's error to the log and returns 1, printing nothing: a list cut short by an error
# must not pass for a count (the first full envelope run's "exactly 75,000" looked like one).
count() {
  local out
  if ! out=$("$bin/kubectl" --kubeconfig "$admin" get "$@" -o name 2>"$work/count.err"); then
    log "kubectl get $* failed: $(tail -n1 "$work/count.err")"
    return 1
  fi
  [[ -z $out ]] && { echo 0; return; }
  wc -l <<<"$out"
}

# count_namespaced: every object of a namespaced type but Events, in all namespaces, from one
# page of each type's list (its remainingItemCount): what `kubectl get <types> -A -o name`
# counts, without the 8 minutes and 6.6 GB that took at full size.
count_namespaced() {
  local resource version path n total=0
  while read -r resource version; do
    [[ $resource == events* ]] && continue
    if [[ $version == */* ]]; then path="/apis/$version/$resource"; else path="/api/$version/$resource"; fi
    n=$(raw "$path?limit=1" | jq -e '(.items | length) + (.metadata.remainingItemCount // 0)') || return 1
    total=$((total + n))
  done < <("$bin/kubectl" --kubeconfig "$admin" api-resources --verbs=list --namespaced=true --no-headers -o wide |
    # NAME [SHORTNAMES] APIVERSION NAMESPACED ...: the version is the field before "true".
    awk '{ for (i = 2; i <= NF; i++) if ($i == "true") { print $1, $(i - 1); break } }')
  echo "$total"
}

# envelope_load NS: one half of the envelope; prints the loader's summary.
envelope_load() {
  local ns=$1
  log "loading $ns"
  "$bin/coord-bench-loader" -kubeconfig "$admin" -namespace "$ns" -workers 32 \
    -deployments "$(envelope_size 5000)" -pods-per-rs 15 -leases "$(envelope_size 2500)" -node-leases 0 \
    -pdbs "$(envelope_size 500)" -widgets "$(envelope_size 2500)" -nodes "$(envelope_size 5000)" | tee "$work/load-$ns.txt" >&2
}

# envelope_wait LABEL WANT LIMIT: wait until kwok has WANT more pods Running than at the last
# wait, has brought none to Running in five polls in a row (a minute apart), or LIMIT seconds
# have passed. One poll without progress is not a stall: at full size kwok paused for over a
# minute at a time while the API server collected its heap (2026-12-06 stopped there with
# 18,046 of 75,000 Running and measured a server still busy with kwok's writes).
envelope_wait() {
  local label=$1 want=$2 limit=$3 start=$SECONDS pods_before=${running_total:-0} last=-1 still=0 n
  while :; do
    # A failed poll counts for nothing: neither progress nor a stall.
    if n=$(running_pods); then
      running_total=$n
      ((running_total - pods_before >= want)) && break
      if ((running_total == last)); then
        ((++still >= 5)) && { log "kwok brought no pod to Running in five minutes; measuring anyway"; break; }
      else
        still=0
      fi
      last=$running_total
      log "$label: $running_total pods Running so far"
    fi
    ((SECONDS - start > limit)) && { log "kwok had ${running_total:-an unknown number of} pods Running after $((limit / 60)) min; measuring anyway"; break; }
    sleep 60
  done
  local running="an unknown number"
  [[ -n ${running_total:-} ]] && running=$((running_total - pods_before))
  echo "$running of its $want pods Running $((SECONDS - start))s after the loader finished" > "$work/running-$label.txt"
}

# The rows and notes so far, kept outside the cluster's directory as they are measured, so a
# run stopped halfway (the whole envelope takes over an hour) still leaves its numbers.
partial="$root/.bench/envelope-partial.md"
save_partial() {
  # A glob that matches nothing stays itself: cat fails on it, which must not end the run.
  { printf '%s\n' "${rows[@]}"; cat "$work"/load-*.txt "$work"/running-*.txt "$work"/memory-*.txt 2>/dev/null || true; } > "$partial"
}

# kwok's failed stage writes. A pod queued twice before kwok's cache sees its first status
# write gets a second pod IP in the second write, which the API server refuses (two IPv4
# podIPs); those pods are Running already, and kwok does not retry the refusal.
kwok_failures() {
  local failed="$work/kwok-failed.log" all ips
  # One snapshot of the log for both counts: kwok keeps writing to it.
  grep '"failed to apply stage"' "$dir/logs/kwok.log" > "$failed" 2>/dev/null || true
  all=$(wc -l < "$failed")
  ips=$(grep -c 'no more than one IP for each IP family' "$failed") || ips=0
  echo "kwok logged $all failed stage writes, $ips of them a second pod IP for a pod already Running"
}

envelope_scan() { # envelope_scan SIZE_LABEL
  local scope="$1"
  # The denominator of bytes per object (objects_in_scope): every object of a namespaced type.
  count_all=$(count_namespaced) || count_all=
  scope="$scope, ${count_all:-an uncounted number of} objects"
  wanted "leases" && bench "leases" "$scope" - - -- leases -A
  wanted "owners --all" && bench "owners --all" "$scope" - - -- owners --all -A
  wanted "overlaps" && bench "overlaps" "$scope" - - -- overlaps -A
  wanted "fields census" && bench "fields census" "$scope" - - -- fields -A
  wanted "check" && bench "check" "$scope" - - -- check -A
  save_partial
}

# envelope_objects NODES: the one-object rows, at full size (NODES: how many node leases).
envelope_objects() {
  count_all=  # per object is not theirs to say
  local nodes=$1
  wanted "owners deployment" && bench "owners deployment" "full" - - -- owners deploy/app-00001 -n env-b
  wanted "owners root" && bench "owners root" "full" - - -- owners widgets.bench.coord.test/w-root -n env-b
  wanted "trace deployment" && bench "trace deployment" "full" - - -- trace deploy/app-00001 -n env-b
  wanted "fields object" && bench "fields object" "full" - - -- fields deploy/app-00001 -n env-b
  wanted "leases nodes" && bench "leases nodes" "full: $nodes node leases" - - -- leases -n kube-node-lease
  return 0
}

# envelope_only: the rows --only names, at full size only: both halves loaded one after the
# other, every pod Running (or kwok stalled for five minutes, or 45 minutes gone) before the
# first row. Into .bench/envelope-rows.md, for a person to set beside the full table.
envelope_only() {
  envelope_load env-a
  envelope_load env-b
  envelope_wait all "$(( $(envelope_size 5000) * 30 ))" 2700
  local mem pods nodes
  mem=$(control_plane_memory)
  echo "control plane after both: $mem" > "$work/memory-all.txt"
  pods=$(pods_total) || pods="an unknown number of"
  nodes=$(count nodes) || nodes="an unknown number of"
  envelope_scan "full: $pods pods"
  envelope_objects "$nodes"
  {
    echo "Generated by \`bash scripts/bench.sh --scale envelope --only '$only' --runs $runs\` on $(date -u +%Y-%m-%d), binary $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' plus uncommitted changes')"
    echo "(fraction $fraction); machine: $(nproc) cores."
    echo
    echo "| command | scope | requests | ours (s) | floor (s) | ratio | our peak RSS (MB) | bytes per object |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}" | awk -F'|' -v OFS='|' '{ print $1, $2, $3, $4, $5, $6, $7, $8, $9, "" }'
    echo
    for ns in env-a env-b; do echo "- $ns: $(tail -n1 "$work/load-$ns.txt")"; done
    echo "- $(cat "$work/running-all.txt")"
    echo "- control plane peak RSS (VmHWM): $mem"
    echo "- $(kwok_failures)"
  } > "$root/.bench/envelope-rows.md"
  log "wrote .bench/envelope-rows.md"
  cat "$root/.bench/envelope-rows.md"
}

# wanted LABEL: whether --only names the row (every row when --only is not given).
wanted() { [[ -z $only || ",$only," == *",$1,"* ]]; }

envelope() {
  [[ -n $only ]] && { envelope_only; return; }
  envelope_load env-a
  envelope_wait env-a "$(( $(envelope_size 5000) * 15 ))" 1800
  local mem_a pods_a
  mem_a=$(control_plane_memory)
  echo "control plane after env-a: $mem_a" > "$work/memory-env-a.txt"
  pods_a=$(pods_total) || pods_a="an unknown number of"
  envelope_scan "half: $pods_a pods"
  envelope_load env-b
  envelope_wait env-b "$(( $(envelope_size 5000) * 15 ))" 1800
  local mem_b pods_b nodes
  mem_b=$(control_plane_memory)
  echo "control plane after env-b: $mem_b" > "$work/memory-env-b.txt"
  pods_b=$(pods_total) || pods_b="an unknown number of"
  nodes=$(count nodes) || nodes="an unknown number of"
  envelope_scan "full: $pods_b pods"
  envelope_objects "$nodes"
  save_partial
  local table="$work/envelope.md"
  {
    echo "## The scalability envelope"
    echo
    echo "Generated by \`bash scripts/bench.sh --scale envelope --runs $runs\` on $(date -u +%Y-%m-%d)"
    echo "(fraction $fraction of the envelope); machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB."
    echo "$nodes kwok nodes (40 s heartbeat leases renewed every 10 s), two namespaces env-a and env-b,"
    echo "each with $(envelope_size 5000) Deployments and ReplicaSets of 15 pods bound to the nodes (kwok takes"
    echo "them to Running), $(envelope_size 2500) Leases, $(envelope_size 500) PDBs and $(envelope_size 2500) custom"
    echo "resources each owning a ConfigMap. The scan commands ran at half size (env-a loaded) and at"
    echo "full size (both): cost per object stays flat when the ratio of the two times is close to the"
    echo "ratio of the pod counts. Medians of $runs runs, ours and the floor alternating, as above."
    echo "Bytes per object: peak RSS over the objects of every namespaced type in the cluster"
    echo "(\`kubectl get\` of each, counted before the scan); flat from half to full when memory grows"
    echo "linearly with what is read."
    echo
    echo "| command | scope | requests | ours (s) | floor (s) | ratio | our peak RSS (MB) | bytes per object |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}" | awk -F'|' -v OFS='|' '{ print $1, $2, $3, $4, $5, $6, $7, $8, $9, "" }'
    echo
    echo "Load (tests/cluster/k8s/loader, 32 writers; then kwok bringing the pods to Running):"
    echo
    echo "- cluster start with $nodes nodes Ready: ${up_seconds}s"
    for ns in env-a env-b; do
      echo "- $ns: $(tail -n1 "$work/load-$ns.txt"); $(cat "$work/running-$ns.txt")"
    done
    echo
    echo "Control plane peak RSS (VmHWM): after env-a: $mem_a; after env-b: $mem_b."
    echo
    echo "$(kwok_failures)."
  } > "$table"
  cp "$table" docs/benchmarks-envelope.md
  # docs/benchmarks.md keeps everything above its envelope section and gains the new one.
  awk '/^## The scalability envelope/ { exit } { print }' docs/benchmarks.md > "$work/benchmarks.md"
  { cat "$work/benchmarks.md"; echo; cat "$table"; } > docs/benchmarks.md
  log "wrote docs/benchmarks-envelope.md and its section of docs/benchmarks.md"
  cat "$table"
}
