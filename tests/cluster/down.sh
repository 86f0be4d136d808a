#!/usr/bin/env bash
# Stops exactly the processes up.sh started in DIR (by their recorded pids) and removes DIR.
#   tests/cluster/down.sh DIR
set -uo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
[[ -d $dir ]] || exit 0
# kwok and the controllers first, etcd last, so nothing logs a storm of errors on the way down.
for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  pidfile="$dir/pids/$name.pid"
  [[ -f $pidfile ]] || continue
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || continue
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
done
# Anything else a test recorded here (helper processes) goes too.
for pidfile in "$dir"/pids/*.pid; do
  [[ -f $pidfile ]] && kill -KILL "$(cat "$pidfile")" 2>/dev/null
done
rm -rf "$dir"
