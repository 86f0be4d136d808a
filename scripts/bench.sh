#!/usr/bin/env bash
# Benchmarks at scale, side by side in one run, on one local control plane (not
# part of CI's test run):
#   bash scripts/bench.sh [--runs N] [--scale F] [--keep] [--link loopback|wan]
# Starts a benchmark cluster in .bench/cluster (kube-controller-manager without the
# deployment and replicaset controllers, so they do not race the loader), loads two
# namespaces with tests/cluster's loader (bench-s at half the size of bench-l;
# --scale multiplies both), then times every command N times (default 5) against:
#   floor  the same GET requests (replayed from the command's own request trace,
#          KUBECTL_COORD_TRACE) issued by a plain Go client, bodies read and not
#          decoded: the pages of one list in order (each needs the token the page
#          before returns), different lists and single GETs 8 at a time;
#   peer   what users run today, where it can be had here.
# Reports medians of wall time and peak RSS, and writes docs/benchmarks.md. On loopback,
# where the server and the client share the cores, check's floor is also timed beside a busy
# loop of ours' CPU time and of a few fixed CPU times (beside, budget below).
# --link wan measures through toxiproxy (built by tests/cluster/build.sh) adding 20 ms
# each way and 100 Mbit/s each way between every client and the API server, as over a
# VPN or a bastion; ours also runs with HTTP/2 off (KUBECTL_COORD_HTTP1=1) to show what
# HTTP/2 is worth there; bytes are the response bodies on the wire (our request trace).
# It writes docs/benchmarks-wan.md.
# --audit: the audit log's benchmarks instead (scripts/bench-audit.sh, its own cluster in
# .bench/audit): history --findings over real logs up to ~5 GB, beside jq and
# kubectl-dev_tool; writes docs/benchmarks-audit.md.
# --scale envelope: the upstream scalability envelope instead (scripts/bench-envelope.sh):
# 5,000 kwok nodes, 150,000 pods, 10,000 Deployments and ReplicaSets, 5,000 Leases,
# PDBs and custom resources, in .bench/envelope; every scan command -A at half and at
# full size, one-object commands at full size, the control plane's memory and the load
# time. COORD_ENVELOPE_FRACTION=0.01 shrinks it all for a dry run of the script.
# --only "owners --all,trace deployment" with --scale envelope: only those rows, at full
# size, once every pod is Running, into .bench/envelope-rows.md (the docs are left alone).
# --crds N: many types instead (scripts/bench-crds.sh): a small namespace, then N namespaced
# CRDs, owners, check and trace on loopback and through the WAN link, beside kubectl-tree
# (built from tests/cluster/peers), against the physical limit; in .bench/crds. It writes
# the "Many types" section of docs/benchmarks-wan.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
runs=5 scale=1 keep=false link=loopback envelope=false crds=0 only=
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --scale) scale=$2; shift 2; [[ $scale == envelope ]] && { envelope=true; scale=1; } ;;
    --keep) keep=true; shift ;;
    --link) link=$2; shift 2 ;;
    --crds) crds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --audit) exec bash scripts/bench-audit.sh --runs "$runs" ;;
    *) echo "usage: $0 [--runs N] [--scale F|envelope [--only ROWS]] [--keep] [--link loopback|wan] [--crds N] [--audit]" >&2; exit 2 ;;
  esac
done
log() { printf '[bench] %s\n' "$*" >&2; }
size() { awk -v n="$1" -v s="$scale" 'BEGIN { printf "%d", n * s }'; }

cargo build --locked --release --bins >&2
coord="$root/target/release/kubectl-coord"
dir="$root/.bench/cluster"
fraction=${COORD_ENVELOPE_FRACTION:-1}
$envelope && dir="$root/.bench/envelope"
((crds > 0)) && dir="$root/.bench/crds"
up_seconds=-
if [[ ! -e $dir/pids ]]; then
  if $envelope; then
    # The kubelet's 40 s node leases, renewed every 10 s: 500 lease writes a second at 5,000 nodes.
    up_start=$SECONDS
    COORD_KCM_CONTROLLERS='*,-deployment-controller,-replicaset-controller' COORD_NODE_LEASE_SECONDS=40 \
      bash tests/cluster/up.sh "$dir" --nodes "$(awk -v f="$fraction" 'BEGIN { printf "%d", 5000 * f }')" >/dev/null
    up_seconds=$((SECONDS - up_start))
  else
    COORD_KCM_CONTROLLERS='*,-deployment-controller,-replicaset-controller' bash tests/cluster/up.sh "$dir" --nodes 0 >/dev/null
  fi
fi
$keep || trap 'bash tests/cluster/down.sh "$dir"' EXIT
bin="$dir/bin"
admin="$dir/admin.kubeconfig"
export KUBECONFIG="$dir/viewer.kubeconfig"
work=$(mktemp -d)
# admin_get PATH: a GET straight to the API server (never through toxiproxy) as its admin.
admin_get() {
  curl -sf --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
    "$(awk -F= '/^SERVER=/ {print $2}' "$dir/cluster.env")$1" -o /dev/null
}

load() {
  local ns=$1 f=$2
  log "loading $ns (x$f)"
  "$bin/coord-bench-loader" -kubeconfig "$admin" -namespace "$ns" \
    -deployments "$(size $((2000 * f / 2)))" -pods-per-rs 10 -leases "$(size $((4000 * f / 2)))" \
    -node-leases "$(size $((1000 * f / 2)))" -pdbs "$(size $((200 * f / 2)))" -widgets "$(size $((5000 * f / 2)))" \
    | tee "$work/load-$ns.txt" "$dir/load-$ns.txt" >&2
}
if $envelope || ((crds > 0)); then
  : # envelope() and many_types() load their own namespaces
elif [[ $(cat "$dir/loaded" 2>/dev/null) != "$scale" ]]; then
  load bench-s 1
  load bench-l 2
  echo "$scale" > "$dir/loaded"
else
  log "bench-s and bench-l already loaded at scale $scale (--keep'd cluster)"
  # The loader's counts from when the --keep'd cluster was loaded, kept beside it.
  for ns in bench-s bench-l; do
    cp "$dir/load-$ns.txt" "$work/load-$ns.txt" 2>/dev/null ||
      echo "loaded before this run, at scale $scale (a --keep'd cluster)" > "$work/load-$ns.txt"
  done
fi

# The API server slows as it ages, idle or not (docs/benchmarks-history.md, "After run 11":
# floors tripled in an hour): it is restarted, same flags, same etcd, before every row (see
# bench); the envelope's never is.
restart_apiserver() {
  local pidfile="$dir/pids/kube-apiserver.pid" pid args
  pid=$(cat "$pidfile")
  mapfile -d '' args < "/proc/$pid/cmdline"
  kill "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  setsid "${args[@]}" >> "$dir/logs/kube-apiserver.log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  local deadline=$((SECONDS + 120))
  until admin_get /readyz; do
    ((SECONDS < deadline)) || { log "kube-apiserver did not come back"; exit 1; }
    sleep 0.3
  done
  # Let the controllers' and scheduler's watches and lease renewals settle first.
  sleep 10
}

# start_wan: every client from here on (KUBECONFIG) reaches the API server through toxiproxy.
start_wan() {
  api_port=$(awk -F= '/^API_PORT=/ {print $2}' "$dir/cluster.env")
  admin_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  wan_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  setsid "$bin/toxiproxy-server" -host 127.0.0.1 -port "$admin_port" > "$work/toxiproxy.log" 2>&1 < /dev/null &
  toxi_pid=$!
  echo "$toxi_pid" > "$dir/pids/toxiproxy.pid"
  toxi="http://127.0.0.1:$admin_port"
  until curl -sf "$toxi/version" >/dev/null; do sleep 0.2; done
  curl -sf -X POST "$toxi/proxies" -d "{\"name\":\"api\",\"listen\":\"127.0.0.1:$wan_port\",\"upstream\":\"127.0.0.1:$api_port\"}" >/dev/null
  for stream in upstream downstream; do
    curl -sf -X POST "$toxi/proxies/api/toxics" \
      -d "{\"name\":\"latency-$stream\",\"type\":\"latency\",\"stream\":\"$stream\",\"attributes\":{\"latency\":20}}" >/dev/null
    # 100 Mbit/s = 12,500 KB/s.
    curl -sf -X POST "$toxi/proxies/api/toxics" \
      -d "{\"name\":\"bandwidth-$stream\",\"type\":\"bandwidth\",\"stream\":\"$stream\",\"attributes\":{\"rate\":12500}}" >/dev/null
  done
  sed "s#https://127.0.0.1:$api_port#https://127.0.0.1:$wan_port#" "$dir/viewer.kubeconfig" > "$dir/wan.kubeconfig"
  export KUBECONFIG="$dir/wan.kubeconfig"
  log "measuring through toxiproxy: 127.0.0.1:$wan_port -> API 127.0.0.1:$api_port, 20 ms and 100 Mbit/s each way"
}
[[ $link == wan ]] && start_wan
objects() { "$bin/kubectl" --kubeconfig "$admin" get "$(namespaced_types)" -n "$1" -o name 2>/dev/null | wc -l; }
namespaced_types() {
  "$bin/kubectl" --kubeconfig "$admin" api-resources --verbs=list --namespaced=true -o name | grep -v '^events' | paste -sd, -
}

# The API server's Go heap (1.5 GB and more here) is collected every other heavy run or so, and
# a collection slows whatever runs beside it by half: runs of one check -n bench-s in a row took
# 0.95 and 0.55 s by turns. With ours and the floor alternating, the collections fell on the
# same side run after run (six pairs: ours 0.51-0.67 s, the floor 0.74-0.84) until one extra
# run flipped the phase. So every timed run starts right after a forced collection (Go's heap
# profile with gc=1 runs one and answers when it is done), and every run, ours, the floor's
# and the peers', meets the same server.
settle_apiserver() {
  admin_get '/debug/pprof/heap?gc=1' || { log "could not collect the API server's heap"; return 1; }
}

# time_runs FILE RUNS CMD...: RUNS runs, one "seconds kilobytes" line each, appended.
time_runs() {
  local out=$1 n=$2 i; shift 2
  for ((i = 0; i < n; i++)); do
    settle_apiserver
    python3 scripts/timeit.py 1 "$@" >> "$out" || { log "FAILED: $*"; return 1; }
  done
}
median() { awk "{print \$$2}" "$1" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

# beside FILE CPU TRACE: one run of the floor with a busy loop beside it that burns CPU seconds
# of CPU time, user and system: a model of a client that costs that much CPU, spread over the
# whole run, with no request ever waiting on its work. On loopback the server and the client
# share the machine's cores, so it shows what that CPU cost alone does to the floor.
busy='while (1) { for (1 .. 20000) {} my @c = times; last if $c[0] + $c[1] >= $ARGV[0] }'
beside() {
  time_runs "$1" 1 bash -c 'perl -e "$1" "$2" & busy=$!; "$3" -kubeconfig "$4" -trace "$5" || exit 1; wait "$busy"' \
    _ "$busy" "$2" "$bin/coord-bench-floor" "$KUBECONFIG" "$3"
}

rows=()
bounds=()
# objects_in_scope ARGS...: the objects in the namespace a command's ARGS name (or in all of
# them), the denominator of the per-object figures; empty when not counted (the envelope's
# one-object rows).
objects_in_scope() {
  [[ " $* " == *" -n bench-s "* ]] && { echo "${count_s:-}"; return; }
  [[ " $* " == *" -n bench-l "* ]] && { echo "${count_l:-}"; return; }
  [[ " $* " == *" -A "* ]] && { echo "${count_all:-}"; return; }
  [[ " $* " == *" -n "* ]] && { echo ""; return; }
  echo "${count_all:-}"
}
# per_object KB OBJECTS: peak RSS per object in scope, in bytes; "-" when not counted.
per_object() {
  [[ -n $2 && $2 -gt 0 ]] || { echo "-"; return; }
  awk -v k="$1" -v n="$2" 'BEGIN { printf "%.0f", k * 1024 / n }'
}
# bench LABEL SCOPE PEER_LABEL PEER_CMD|- -- COORD_ARGS...
bench() {
  local label=$1 scope=$2 peer_label=$3 peer=$4; shift 5
  log "$label"
  # Each row against a server started afresh: the rows before it (the peers' full-object lists
  # above all) age it: in a run with one restart at its start (2026-12-04), check -n bench-l took
  # 0.86 s against a floor of 0.48 late in the run, and 0.61 against 0.38 after a restart. The
  # envelope keeps its server: its 5,000 kwok nodes renew leases through it.
  $envelope || restart_apiserver
  local trace="$work/trace"
  rm -f "$trace"
  KUBECTL_COORD_TRACE="$trace" "$coord" "$@" >/dev/null 2>&1
  # Ours and the floor alternate, so a slow spell of the cluster weighs on both alike, and
  # which goes first swaps each run, so that whatever one run leaves the next falls on both
  # sides too. With ours always first, check -A over the WAN link measured 1.32x where a
  # rotating order measured 1.13-1.19x on the same binary (2026-12-04).
  # check's rows on loopback also time the floor beside ours' CPU time (see beside), each run
  # with the CPU time of the run of ours just before it.
  local bound=false
  [[ $link == loopback && $1 == check ]] && bound=true
  : > "$work/ours"; : > "$work/floor"; : > "$work/beside"
  for ((i = 0; i < runs; i++)); do
    if ((i % 2 == 0)); then
      time_runs "$work/ours" 1 "$coord" "$@"
      time_runs "$work/floor" 1 "$bin/coord-bench-floor" -kubeconfig "$KUBECONFIG" -trace "$trace"
    else
      time_runs "$work/floor" 1 "$bin/coord-bench-floor" -kubeconfig "$KUBECONFIG" -trace "$trace"
      time_runs "$work/ours" 1 "$coord" "$@"
    fi
    if $bound; then beside "$work/beside" "$(tail -n1 "$work/ours" | awk '{print $3}')" "$trace"; fi
  done
  local ours floor rss requests
  ours=$(median "$work/ours" 1); floor=$(median "$work/floor" 1); rss=$(median "$work/ours" 2)
  requests=$(grep -c '^GET' "$trace")
  local read per_rss
  read=$(objects_in_scope "$@"); per_rss=$(per_object "$rss" "$read")
  local peer_s="-" peer_rss="-" peer_ratio="-"
  if [[ $peer != - ]]; then
    : > "$work/peer"
    # Over the WAN link a full-object kubectl list moves over a gigabyte: one run there.
    local peer_runs=$runs
    [[ $link == wan ]] && peer_runs=1
    time_runs "$work/peer" "$peer_runs" bash -c "$peer"
    peer_s=$(median "$work/peer" 1); peer_rss=$(mb "$(median "$work/peer" 2)"); peer_ratio=$(ratio "$peer_s" "$ours")
  fi
  if [[ $link == wan ]]; then
    local bytes h1
    bytes=$(awk -F'\t' '$1 == "GET" && $5 ~ /^[0-9]+$/ {b += $5} END {printf "%.2f", b / 1048576}' "$trace")
    : > "$work/h1"
    for ((i = 0; i < runs; i++)); do KUBECTL_COORD_HTTP1=1 time_runs "$work/h1" 1 "$coord" "$@"; done
    h1=$(median "$work/h1" 1)
    rows+=("| \`kubectl coord $*\` | $scope | $requests | $bytes | $ours | $h1 | $floor | $(ratio "$ours" "$floor") | $(mb "$rss") | $per_rss | $peer_label | $peer_s | $peer_ratio |")
  else
    rows+=("| \`kubectl coord $*\` | $scope | $requests | $ours | $floor | $(ratio "$ours" "$floor") | $(mb "$rss") | $per_rss | $peer_label | $peer_s | $peer_ratio | $peer_rss |")
  fi
  if $bound; then
    local cpu near
    cpu=$(median "$work/ours" 3); near=$(median "$work/beside" 1)
    # CPU time per object read, the tracked figure: objects in the namespace (or in all of them).
    local per
    per=$(awk -v c="$cpu" -v n="$read" 'BEGIN { printf "%.1f", c * 1e6 / n }')
    bounds+=("| \`kubectl coord $*\` | $ours | $cpu | $read | $per | $floor | $near | $(ratio "$near" "$floor") | $(ratio "$ours" "$near") |")
  fi
}

# budget ARGS...: the floor of `kubectl coord ARGS` alone and beside busy loops of each CPU
# time in budget_cpus: how little CPU a client may spend for its wall time to stay within 1.2x
# of the floor.
budget_cpus=(0.05 0.10 0.15 0.20 0.30)
budget() {
  log "CPU budget: $*"
  $envelope || restart_apiserver
  local trace="$work/trace" cpu
  rm -f "$trace"
  KUBECTL_COORD_TRACE="$trace" "$coord" "$@" >/dev/null 2>&1
  : > "$work/alone"
  for cpu in "${budget_cpus[@]}"; do : > "$work/beside-$cpu"; done
  for ((i = 0; i < runs; i++)); do
    time_runs "$work/alone" 1 "$bin/coord-bench-floor" -kubeconfig "$KUBECONFIG" -trace "$trace"
    for cpu in "${budget_cpus[@]}"; do beside "$work/beside-$cpu" "$cpu" "$trace"; done
  done
  local alone line near
  alone=$(median "$work/alone" 1)
  line="| \`kubectl coord $*\` | $alone"
  for cpu in "${budget_cpus[@]}"; do
    near=$(median "$work/beside-$cpu" 1)
    line+=" | $near ($(ratio "$near" "$alone")x)"
  done
  budget_row="$line |"
}

k="$bin/kubectl"
$envelope && { source scripts/bench-envelope.sh; envelope; exit 0; }
((crds > 0)) && { source scripts/bench-crds.sh; many_types; exit 0; }
types=$(namespaced_types)
count_s=$(objects bench-s); count_l=$(objects bench-l)
count_all=$("$bin/kubectl" --kubeconfig "$admin" get "$types" -A -o name 2>/dev/null | wc -l)
leases_all=$("$k" --kubeconfig "$admin" get leases -A --no-headers | wc -l)
bench "leases" "$leases_all leases" "kubectl get lease -A" "$k get lease -A" -- leases -A
tree="$(bash tests/cluster/build.sh --peers)/kubectl-tree"
bench "owners deployment" "bench-l: $count_l objects" "kubectl-tree" "$tree deployment app-00001 -n bench-l" \
  -- owners deploy/app-00001 -n bench-l
bench "owners root" "bench-l: $count_l objects" "kubectl-tree" "$tree widgets.bench.coord.test w-root -n bench-l" \
  -- owners widgets.bench.coord.test/w-root -n bench-l
bench "owners --all s" "bench-s: $count_s objects" - - -- owners --all -n bench-s
bench "owners --all l" "bench-l: $count_l objects" "kubectl get (every type) -o json" "$k get $types -n bench-l -o json" \
  -- owners --all -n bench-l
bench "overlaps s" "bench-s: $count_s objects" - - -- overlaps -n bench-s
bench "overlaps l" "bench-l: $count_l objects" - - -- overlaps -n bench-l
bench "fields census s" "bench-s: $count_s objects" - - -- fields -n bench-s
bench "fields census l" "bench-l: $count_l objects" - - -- fields -n bench-l
# check against the commands it replaces, run one after the other as a user would.
one_by_one() { echo "$coord leases $1 && $coord owners --all $1 && $coord overlaps $1 && $coord fields $1"; }
bench "check s" "bench-s: $count_s objects" "the four commands one by one" "$(one_by_one '-n bench-s')" -- check -n bench-s
bench "check l" "bench-l: $count_l objects" "the four commands one by one" "$(one_by_one '-n bench-l')" -- check -n bench-l
bench "check --skip trace l" "bench-l: $count_l objects" "the four commands one by one" "$(one_by_one '-n bench-l')" \
  -- check -n bench-l --skip trace
bench "check -A" "every namespace" "the four commands one by one" "$(one_by_one -A)" -- check -A
bench "trace deployment" "bench-l: $count_l objects" "kubectl events --for" "$k events -n bench-l --for deploy/app-00001" \
  -- trace deploy/app-00001 -n bench-l
bench "fields object" "one Deployment" "kubectl get -o yaml --show-managed-fields" \
  "$k get deploy app-00000 -n bench-l -o yaml --show-managed-fields" -- fields deploy/app-00000 -n bench-l
budget_row=
[[ $link == loopback ]] && budget check -n bench-l

log "--help"
help_ms=$(python3 - "$coord" <<'EOF'
import subprocess, sys, time
runs = []
for _ in range(50):
    t = time.perf_counter()
    subprocess.run([sys.argv[1], "--help"], stdout=subprocess.DEVNULL, check=True)
    runs.append((time.perf_counter() - t) * 1000)
runs.sort()
print(f"{runs[len(runs) // 2]:.1f}")
EOF
)

if [[ $link == wan ]]; then
  out=docs/benchmarks-wan.md
  # The many-types section (bench.sh --crds N) is kept when the rest is rewritten.
  awk '/^## Many types/ { p = 1 } p' "$out" > "$work/many-types-kept.md" 2>/dev/null || true
  {
    echo "# Benchmarks over a WAN-like link"
    echo
    echo "Generated by \`bash scripts/bench.sh --link wan --runs $runs --scale $scale\` on $(date -u +%Y-%m-%d);"
    echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; the same namespaces as [benchmarks.md](benchmarks.md)."
    echo
    echo "Every client (ours, the floor, kubectl) reaches the API server through toxiproxy"
    echo "$("$bin/toxiproxy-server" -version 2>&1 | head -n1 | tr -d '\n') on loopback with 20 ms of latency and 100 Mbit/s in each"
    echo "direction: a round trip costs 40 ms, as over a VPN or a bastion. **ours**: HTTP/2 (ALPN) and"
    echo "gzip; **ours, HTTP/1.1**: the same binary with KUBECTL_COORD_HTTP1=1 (each concurrent"
    echo "request on its own connection, as kube's own client does). **floor**: the command's own"
    echo "requests replayed by client-go's transport (HTTP/2 and gzip, kubectl's defaults), the pages"
    echo "of each list in order, everything else 8 at a time. **MB**: response bodies on the wire"
    echo "(gzip where the server compressed), from our request trace. Medians of $runs runs, each right after a"
    echo "full collection of the API server's heap, each row against an API server started afresh for"
    echo "it; peers one run."
    echo
    echo "**Target**: every command within 1.2x of its floor over this link (ratio = ours / floor)."
    echo
    echo "| command | scope | requests | MB | ours (s) | ours, HTTP/1.1 (s) | floor (s) | ratio | our peak RSS (MB) | bytes per object | peer | peer (s) | peer ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    # The ratio is the 9th field of a row split on '|' (the first field is empty).
    printf '%s\n' "${rows[@]}" | awk -F'|' '
      { n++; r = $9 + 0; if (r <= 1.2) ok++; else over = over (over ? "; " : "") $2 "(" r ")" }
      END { printf "Within 1.2x: %d of %d rows.%s\n", ok, n, over ? " Above it:" over "." : "" }'
    if [[ -s $work/many-types-kept.md ]]; then echo; cat "$work/many-types-kept.md"; fi
  } > "$out"
  kill "$toxi_pid" 2>/dev/null || true
  log "wrote $out"
  cat "$out"
  exit 0
fi

out=docs/benchmarks.md
mkdir -p docs
# The envelope's section (bench.sh --scale envelope) is kept when the rest is rewritten.
awk '/^## The scalability envelope/ { p = 1 } p' "$out" > "$work/envelope-kept.md" 2>/dev/null || true
{
  echo "# Benchmarks"
  echo
  echo "Generated by \`bash scripts/bench.sh --runs $runs --scale $scale\` on $(date -u +%Y-%m-%d);"
  echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ {print $2}') GiB;"
  echo "control plane: kube-apiserver $("$k" version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])') from tests/cluster, on the same machine."
  echo
  echo "**Targets.** Over the WAN link, every command within 1.2x of its floor"
  echo "([benchmarks-wan.md](benchmarks-wan.md)). On loopback the API server and the client share"
  echo "the machine's cores, so no client can spend the CPU a scan needs and stay near the floor"
  echo "alone; there the target is ours within 1.1x of the floor run beside a busy loop of our own"
  echo "CPU time (**ours / beside**, below: no time lost to how requests are scheduled). Tracked at"
  echo "every run: check's CPU time per object read (below) and peak RSS."
  echo
  echo "Each figure is the median of $runs runs; ours and the floor run alternately, each run right"
  echo "after a full collection of the API server's heap (so that its periodic collections do not"
  echo "fall on one side: they did, run after run, before run 13), each row against an API server"
  echo "started afresh for it (the server slows as it ages; before run 14 one restart began the"
  echo "run). **floor**: the"
  echo "same GET requests the command made (its own request trace), replayed by a plain Go client"
  echo "(client-go's transport) with bodies read and not decoded: the pages of one paginated list in"
  echo "order, as any client must (each needs the continue token of the page before), different"
  echo "lists and single GETs 8 at a time, with no regard for which request the command needed an"
  echo "answer to before it could ask the next. **ratio** = ours / floor. **peer ratio** = peer /"
  echo "ours (above 1: we are faster). Wall time and peak RSS per run: scripts/timeit.py (monotonic"
  echo "clock, the child's own rusage). **bytes per object**: our peak RSS over the objects in"
  echo "scope (every namespaced type in the namespace, or in all of them), tracked at every size."
  echo
  echo "| command | scope | requests | ours (s) | floor (s) | ratio | our peak RSS (MB) | bytes per object | peer | peer (s) | peer ratio | peer peak RSS (MB) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "\`kubectl coord --help\`: median $help_ms ms over 50 runs."
  echo
  echo "Namespaces loaded (tests/cluster/k8s/loader):"
  echo
  for ns in bench-s bench-l; do
    counts=$(awk '/already there/ {printf "%s %d, ", $1, $3 + $6}' "$work/load-$ns.txt" | sed 's/, $//')
    echo "- $ns: ${counts:-$(cat "$work/load-$ns.txt")}"
  done
  echo
  echo "Peers: for owners of one object, ahmetb/kubectl-tree at 552f016, built from the copy of its"
  echo "source in tests/cluster/peers (the Go module proxy here answers 403 for it); for \`owners --all\`,"
  echo "\`kubectl get\` of every namespaced type with full objects, what kubectl-tree reads. knight42/kubectl-blame"
  echo "is not served by the proxy either, so for fields"
  echo "on one object, \`kubectl get -o yaml --show-managed-fields\`. overlaps and the fields"
  echo "census have no peer (no tool does this). \`kubectl get lease -A\` is the leases peer. For"
  echo "trace, \`kubectl events --for\` (one object's Events, nothing linked) is the nearest kubectl has."
  echo "For check, the peer is what it replaces: leases, owners --all, overlaps and the fields census"
  echo "run one after the other (trace has no namespace-wide form); its floor replays the union of"
  echo "the lists they share, each once."
  echo
  echo "The same over a WAN-like link (20 ms and 100 Mbit/s each way): [benchmarks-wan.md](benchmarks-wan.md)."
  echo "Earlier runs, and what changed between them: [benchmarks-history.md](benchmarks-history.md)."
  echo
  cat <<'LISTS'
## What each command lists

Every list is paginated (limit and continue) and metadata-only where metadata suffices. A
command's lists go out together, as many at once as the connection's pace allows
(src/connect/pace.rs: 64 at first, one more for each prompt answer, halved once on a 429 or
503, at most 250 over HTTP/2 and 8 over HTTP/1.1, where each is a connection of its own).
Never listed: the events.k8s.io and metrics.k8s.io groups (a copy of core Events; figures,
not objects), componentstatuses, and types that cannot be listed.

- `leases`: the Leases in scope, whole (holder and renewal times are spec); a GET per holder
  pod named, the Nodes of expired node leases (one list of Nodes past 20), and
  LeaseCandidates where they are served.
- `owners TYPE/NAME` of a namespaced object: every namespaced type in its namespace,
  metadata-only, where all its dependents must be (the garbage collector resolves a
  namespaced owner only in the dependent's own namespace, never for a cluster-scoped
  dependent); then only the cluster-scoped kinds those objects name as owners, up to the
  roots; then the printed rows whole, for their status. Of a cluster-scoped object: every
  type everywhere, since its dependents may be in any namespace.
- `owners --all`: every type in scope, and every cluster-scoped type: its findings are about
  those objects too (a cluster-scoped dependent of a namespaced owner is one).
- `trace TYPE/NAME`: as owners, downward only: for a namespaced root, its namespace's
  namespaced types alone; then the tree's objects whole, their Events, and the
  control-plane Leases.
- `overlaps`: the controllers that select pods (Deployments, ReplicaSets, StatefulSets,
  DaemonSets, ReplicationControllers, Jobs) and PDBs whole, since selectors and templates are
  spec; pods metadata-only (labels).
- `fields` without an object: the common workload kinds (Deployments, ReplicaSets,
  StatefulSets, DaemonSets, Jobs, CronJobs, Services) metadata-only: managedFields is metadata.
- `check`: each list once for every analysis: controllers, PDBs, Leases and LeaseCandidates
  whole, every other type metadata-only, and one metadata list of the pods with no node.
LISTS
  echo
  echo "## What the floor leaves for the client's CPU"
  echo
  echo "Here the API server and the client share the machine's $(nproc) cores, so every CPU second a"
  echo "client spends is taken from the server. **beside**: the floor with a busy loop beside it"
  echo "that burns as much CPU time (user and system) as ours took in the run just before it: a"
  echo "client that costs what ours costs, spread over the whole run, with no request ever waiting"
  echo "on its work. It shows how much of ours' distance from the floor is its CPU time alone."
  echo "Medians of $runs runs, the three alternating."
  echo
  echo "| command | ours (s) | our CPU (s) | objects read | our CPU per object (µs) | floor (s) | floor beside our CPU (s) | beside / floor | ours / beside |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${bounds[@]}"
  echo
  echo "The same floor beside busy loops of a given CPU time: the CPU a client may spend and stay"
  echo "within 1.2x of the floor on this machine."
  echo
  echo "| command | floor (s) |$(printf ' beside %s s |' "${budget_cpus[@]}")"
  echo "|---|---|$(printf -- '---|%.0s' "${budget_cpus[@]}")"
  echo "$budget_row"
  if [[ -s $work/envelope-kept.md ]]; then echo; cat "$work/envelope-kept.md"; fi
} > "$out"
log "wrote $out"
cat "$out"
