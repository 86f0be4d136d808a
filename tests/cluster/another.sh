#!/usr/bin/env bash
# Starts a second instance of a component of a cluster up.sh started in DIR, with the first
# one's command line and what must differ changed: real histories for the audit-log tests.
#
#   tests/cluster/another.sh DIR kube-apiserver      a second API server on the same etcd,
#                                                     with its own port and audit log
#                                                     (DIR/audit-2.log): two logs to merge
#   tests/cluster/another.sh DIR kube-controller-manager
#                                                     a second controller manager with leader
#                                                     election off, beside the elected one:
#                                                     two of every controller, racing (409s)
#
# Prints KEY=VALUE lines (API_PORT_2 and AUDIT_LOG_2 for the API server). down.sh stops it
# with the rest (its pid is in DIR/pids); `kill $(cat DIR/pids/NAME-2.pid)` stops it alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -eq 2 && $2 =~ ^(kube-apiserver|kube-controller-manager)$ ]] \
  || { echo "usage: $0 DIR kube-apiserver|kube-controller-manager" >&2; exit 2; }
dir=$(cd "$1" && pwd) component=$2
LOG_TAG=another
# shellcheck source=tests/cluster/lib.sh
source "$here/lib.sh"
# shellcheck disable=SC1091
source "$dir/cluster.env"
taken+="$API_PORT $ETCD_PORT $KCM_PORT $SCHED_PORT "
pid=$(cat "$dir/pids/$component.pid")
mapfile -d '' cmd < "/proc/$pid/cmdline"
(( ${#cmd[@]} )) || die "$component (pid $pid) is not running"
[[ ! -e $dir/pids/$component-2.pid ]] || die "a second $component already runs in $dir"

# set_flag NAME VALUE: the flag's value in cmd replaced (both --flag value and --flag=value),
# or the flag added.
set_flag() {
  local name=$1 value=$2 i
  for i in "${!cmd[@]}"; do
    if [[ ${cmd[i]} == "$name" ]]; then cmd[i+1]=$value; return; fi
    if [[ ${cmd[i]} == "$name="* ]]; then cmd[i]="$name=$value"; return; fi
  done
  cmd+=("$name=$value")
}

port=$(free_port)
set_flag --secure-port "$port"
case $component in
  kube-apiserver)
    set_flag --audit-log-path "$dir/audit-2.log"
    launch kube-apiserver-2 "${cmd[@]}"
    ready() {
      curl -sf --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
        "https://127.0.0.1:$port/readyz"
    }
    wait_for "the second kube-apiserver /readyz" 120 kube-apiserver-2 ready
    echo "API_PORT_2=$port"
    echo "AUDIT_LOG_2=$dir/audit-2.log"
    ;;
  kube-controller-manager)
    set_flag --leader-elect false
    launch kube-controller-manager-2 "${cmd[@]}"
    ready() { curl -sfk "https://127.0.0.1:$port/healthz"; }
    wait_for "the second kube-controller-manager /healthz" 60 kube-controller-manager-2 ready
    echo "KCM_PORT_2=$port"
    ;;
esac
