#!/usr/bin/env bash
# Benchmark of the pure overlap analysis at two sizes (time and peak RSS), to show
# it grows linearly. Not part of the test run.
#   bash scripts/bench-overlap.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --bench overlap_scale --no-run >/dev/null 2>&1
bin=$(ls -t target/release/deps/overlap_scale-* | grep -v '\.d$' | head -1)
for size in "2500 25000" "5000 50000" "10000 100000"; do
  for run in 1 2 3; do
    /usr/bin/time -f "peak_rss_kb=%M wall_s=%e" "$bin" $size 2>&1 | tr '\n' ' '
    echo
  done
done
