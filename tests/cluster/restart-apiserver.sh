#!/usr/bin/env bash
# Restarts the kube-apiserver of a cluster up.sh started in DIR: stops it (SIGTERM, as a
# rolling upgrade does), keeps it down SECONDS, optionally compacts etcd to its current
# revision meanwhile (every resourceVersion a client holds is then too old), and starts it
# again with the same command line, waiting until it is ready.
#
#   tests/cluster/restart-apiserver.sh DIR SECONDS [--compact]
#
# Prints two lines on stdout, `down EPOCH_MS` and `up EPOCH_MS` (when it stopped answering
# and when /readyz said ok again), for a test to judge what a watch saw in between.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || { echo "usage: $0 DIR SECONDS [--compact]" >&2; exit 2; }
dir=$(cd "$1" && pwd) down_for=$2 compact=${3:-}
LOG_TAG=restart
# shellcheck source=tests/cluster/lib.sh
source "$here/lib.sh"
# shellcheck disable=SC1091
source "$dir/cluster.env"
pidfile=$dir/pids/kube-apiserver.pid
pid=$(cat "$pidfile")
mapfile -d '' cmd < "/proc/$pid/cmdline"
(( ${#cmd[@]} )) || die "kube-apiserver (pid $pid) is not running"
ms() { date +%s%3N; }

kill -TERM "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$pid" 2>/dev/null || true
echo "down $(ms)"
started=$SECONDS
if [[ $compact == --compact ]]; then
  etcd="http://127.0.0.1:$ETCD_PORT/v3/kv"
  # A write first, so that the revision compacted to is newer than anything listed before.
  curl -sf -X POST "$etcd/put" -d '{"key":"Y29vcmQtcmVzdGFydA==","value":"eA=="}' >/dev/null \
    || die "etcd did not take the write"
  revision=$(curl -sf -X POST "$etcd/range" -d '{"key":"Y29vcmQtcmVzdGFydA=="}' | sed 's/.*"revision":"\([0-9]*\)".*/\1/')
  curl -sf -X POST "$etcd/compaction" -d "{\"revision\":\"$revision\",\"physical\":true}" >/dev/null \
    || die "etcd did not compact to $revision"
  log "etcd compacted to revision $revision"
fi
sleep $(( down_for > SECONDS - started ? down_for - (SECONDS - started) : 0 ))
launch kube-apiserver "${cmd[@]}"
api_ready() {
  curl -sf --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
    "https://127.0.0.1:$API_PORT/readyz"
}
wait_for "kube-apiserver /readyz after the restart" 120 kube-apiserver api_ready
echo "up $(ms)"
