#!/usr/bin/env bash
# Two builds of the plugin on one kept envelope cluster, so a row that is slower than an
# older table can be told apart from a slower server (not part of CI's test run):
#   bash scripts/bench.sh --scale envelope [--only ROWS] --keep
#   git worktree add /tmp/base BASE && cargo build --release --manifest-path /tmp/base/Cargo.toml
#   bash scripts/bench-ab.sh /tmp/base/target/release/kubectl-coord [ROUNDS]
# For each of the three one-cluster rows it runs the baseline ("base"), this tree's release
# build ("head") and the floor (replaying head's request trace) ROUNDS times (default 5),
# rotating which goes first each round, with the server's heap collected before every run.
# Raw lines "label row seconds peak_rss_kb cpu_seconds" go to .bench/ab.txt, medians to stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 && -x $1 && ${2:-5} =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 BASELINE_BINARY [ROUNDS]" >&2; exit 2; }
base=$1 rounds=${2:-5}
dir=$root/.bench/envelope bin=$root/.bench/envelope/bin
[[ -f $dir/viewer.kubeconfig ]] || { echo "no kept envelope cluster in $dir" >&2; exit 1; }
export KUBECONFIG=$dir/viewer.kubeconfig
head=$root/target/release/kubectl-coord floor=$bin/coord-bench-floor
cargo build --locked --release --bin kubectl-coord --manifest-path "$root/Cargo.toml" >&2
out=$root/.bench/ab.txt
: > "$out"

settle() { "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" get --raw '/debug/pprof/heap?gc=1' >/dev/null; }
one() { # one LABEL ROW COMMAND...
  local label=$1 row=$2; shift 2
  settle
  echo "$label $row $(python3 "$root/scripts/timeit.py" 1 "$@")" >> "$out"
}
row() { # row NAME ARGS...: ARGS are the plugin's arguments
  local name=$1 trace=$root/.bench/ab-trace; shift
  rm -f "$trace"
  KUBECTL_COORD_TRACE="$trace" "$head" "$@" >/dev/null
  local runs=(base head floor)
  for ((i = 0; i < rounds; i++)); do
    for ((j = 0; j < 3; j++)); do
      case ${runs[(i + j) % 3]} in
        base) one base "$name" "$base" "$@" ;;
        head) one head "$name" "$head" "$@" ;;
        floor) one floor "$name" "$floor" -kubeconfig "$KUBECONFIG" -trace "$trace" ;;
      esac
    done
  done
}
row owners-all owners --all -A
row owners-deploy owners deploy/app-00001 -n env-b
row trace trace deploy/app-00001 -n env-b

python3 - "$out" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, row, wall, rss, cpu = line.split()
    runs[row, label].append((float(wall), int(rss), float(cpu)))
print("| row | build | runs | median (s) | range (s) | CPU (s) | peak RSS (MB) |")
print("|---|---|---|---|---|---|---|")
for (row, label), rs in runs.items():
    walls = [r[0] for r in rs]
    print(f"| {row} | {label} | {len(rs)} | {statistics.median(walls):.2f} | "
          f"{min(walls):.2f}-{max(walls):.2f} | {statistics.median(r[2] for r in rs):.2f} | "
          f"{max(r[1] for r in rs) // 1024} |")
EOF
