# Helpers shared by up.sh and operators.sh, sourced with $dir (the cluster directory) and
# $pki set; `taken` holds the ports handed out so far.
log() { printf '[%s] %s\n' "${LOG_TAG:-up}" "$*" >&2; }
die() { printf '[%s] FAILED: %s\n' "${LOG_TAG:-up}" "$*" >&2; exit 1; }

taken=" "
# Ports below the kernel's ephemeral range: an outgoing connection (another cluster's,
# kwok's) can take any port in that range as its source between the check here and the
# server's bind, which once failed a second cluster's API server with "address in use".
read -r ephemeral_low _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral_low=32768
((ephemeral_low > 12000)) || ephemeral_low=32768
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((10000 + RANDOM % (ephemeral_low - 10000)))
    [[ $taken == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      taken+="$p "
      echo "$p"
      return
    fi
  done
  die "no free loopback port found"
}

ossl() { openssl "$@" 2>/dev/null; }
cert() { # cert NAME SUBJECT [SAN]
  local name=$1 subj=$2 san=${3:-}
  ossl req -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj"
  local ext="$pki/$name.ext"
  if [[ -n $san ]]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" > "$ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' > "$ext"
  fi
  ossl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -out "$pki/$name.crt" -days 30 -extfile "$ext" || die "openssl could not sign $name"
}

launch() { # launch NAME CMD...: start in its own session, record the pid
  local name=$1; shift
  setsid "$@" > "$dir/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$dir/pids/$name.pid"
}
alive() { kill -0 "$(cat "$dir/pids/$1.pid")" 2>/dev/null; }
wait_for() { # wait_for WHAT SECONDS PROCESS CMD...
  local what=$1 limit=$2 proc=$3; shift 3
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [[ -n $proc ]] && ! alive "$proc"; then
      tail -n 20 "$dir/logs/$proc.log" >&2 || true
      die "$proc exited while waiting for $what (log: $dir/logs/$proc.log)"
    fi
    (( SECONDS < deadline )) || { tail -n 20 "$dir/logs/${proc:-kube-apiserver}.log" >&2 || true; die "timed out after ${limit}s waiting for $what"; }
    sleep 0.3
  done
}
