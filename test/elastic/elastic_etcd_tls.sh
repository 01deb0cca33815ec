#!/usr/bin/env bash
# Elastic jobs through etcd over TLS with client certificates, against a
# cluster of three etcd members on loopback (docs/elastic.md, "Without
# chorusrun: etcd"). The certificates are made here with openssl: a CA, a
# server certificate for 127.0.0.1 and localhost, a client certificate, an
# expired one, and a second CA that signed neither. Every member serves
# https:// with --client-cert-auth; the workers get all three endpoints.
#  a. refused, each with an error naming the variable and the file: the
#     other CA as CHORUS_RDZV_CA_FILE; no client certificate; the expired one.
#  b. 3 workers train; the member the workers talk to (the first endpoint)
#     is killed -9 at step 20: training goes on (no reset), the workers'
#     requests go to the next endpoint. Then a worker is killed -9: the
#     survivors form their next world through the two members left (within
#     3 s) and finish with equal models.
# Exit 77 (ctest: skipped) when etcd or openssl is not installed.
# usage: elastic_etcd_tls.sh ELASTIC_COUNTER
set -uo pipefail
counter="$1"
for tool in etcd openssl; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIP: $tool is not installed (Debian: etcd-server, openssl; scripts/install_deps.sh installs them)"
    exit 77
  fi
done
work="$(mktemp -d)"
pids=()        # every process this script started
etcd_pids=()   # the members, by number
cleanup() {
  for p in "${pids[@]}" "${etcd_pids[@]}"; do kill -9 "$p" 2> /dev/null && wait "$p" 2> /dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
ok=1
fail() { echo "FAIL: $*"; ok=0; }
source "$(dirname "${BASH_SOURCE[0]}")/etcd_test_lib.sh"

# The certificates (EC keys: quick to make).
tls="$work/tls"
mkdir -p "$tls"
make_certificates() {
  local key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${key[@]}" -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 2 -subj /CN=chorus-test-ca &&
    openssl req -x509 "${key[@]}" -keyout "$tls/other-ca.key" -out "$tls/other-ca.pem" -days 2 -subj /CN=other-ca &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "$tls/server.ext" &&
    printf 'extendedKeyUsage=clientAuth\n' > "$tls/client.ext" || return 1
  # sign NAME DAYS EXTENSIONS: NAME.pem and NAME.key, signed by the CA for DAYS (-1: expired yesterday).
  sign() {
    openssl req "${key[@]}" -keyout "$tls/$1.key" -out "$tls/$1.csr" -subj "/CN=$1" &&
      openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days "$2" \
        -extfile "$tls/$3.ext" -out "$tls/$1.pem"
  }
  sign server 2 server && sign client 2 client && sign expired -1 client
}
make_certificates > "$work/openssl.log" 2>&1 || { cat "$work/openssl.log"; fail "openssl could not make the certificates"; exit 1; }
tls_ca="$tls/ca.pem" tls_cert="$tls/client.pem" tls_key="$tls/client.key"

# A cluster of three on loopback: clients over TLS, peers over plain HTTP.
client_ports=() peer_ports=() cluster=""
for i in 1 2 3; do
  client_ports[i]="$(free_port)" peer_ports[i]="$(free_port)"
  cluster+="${cluster:+,}m$i=http://127.0.0.1:${peer_ports[i]}"
done
start_member() {
  local i="$1" url="https://127.0.0.1:${client_ports[$1]}"
  etcd --name "m$i" --data-dir "$work/m$i" --listen-client-urls "$url" --advertise-client-urls "$url" \
    --listen-peer-urls "http://127.0.0.1:${peer_ports[i]}" --initial-advertise-peer-urls "http://127.0.0.1:${peer_ports[i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token chorus-tls-test \
    --heartbeat-interval 50 --election-timeout 500 \
    --cert-file "$tls/server.pem" --key-file "$tls/server.key" --client-cert-auth --trusted-ca-file "$tls/ca.pem" \
    >> "$work/m$i.log" 2>&1 &
  etcd_pids[i]=$!
}
for i in 1 2 3; do start_member "$i"; done
healthy() {
  python3 - "$1" "$tls_ca" "$tls_cert" "$tls_key" << 'EOF'
import json, ssl, sys, urllib.request
context = ssl.create_default_context(cafile=sys.argv[2])
context.load_cert_chain(sys.argv[3], sys.argv[4])
sys.exit(json.load(urllib.request.urlopen(sys.argv[1] + "/health", timeout=2, context=context)).get("health") != "true")
EOF
}
etcd_url="https://127.0.0.1:${client_ports[2]}"  # the member never killed: etcd_get asks it
for _ in $(seq 150); do healthy "$etcd_url" 2> /dev/null && break; sleep 0.1; done
healthy "$etcd_url" || { tail -n 5 "$work"/m*.log; fail "the etcd cluster did not become healthy"; exit 1; }
endpoint="https://127.0.0.1:${client_ports[1]},https://127.0.0.1:${client_ports[2]},https://127.0.0.1:${client_ports[3]}"

# a. refusals: each worker fails at once, naming the variable and the file
refused() {  # refused NAME PATTERN VAR=VALUE...: a worker with those variables fails, its output matching PATTERN
  local name="$1" pattern="$2"; shift 2
  (env CHORUS_RDZV_BACKEND=etcd CHORUS_RDZV_ENDPOINT="$endpoint" CHORUS_RDZV_ID="$name" "$@" \
    timeout 60 "$counter" --steps 1 > "$work/$name.out" 2>&1; exit $?) 2> /dev/null && fail "$name: exit 0"
  grep -q -- "$pattern" "$work/$name.out" || { cat "$work/$name.out"; fail "$name: no clear error (want '$pattern')"; return; }
  echo "$name: passed ($(grep -o -- "$pattern.*" "$work/$name.out" | head -1 | cut -c1-240))"
}
refused wrong_ca "not signed by CHORUS_RDZV_CA_FILE=$tls/other-ca.pem" \
  CHORUS_RDZV_CA_FILE="$tls/other-ca.pem" CHORUS_RDZV_CERT_FILE="$tls_cert" CHORUS_RDZV_KEY_FILE="$tls_key"
refused no_client_cert "none was given: CHORUS_RDZV_CERT_FILE, CHORUS_RDZV_KEY_FILE" CHORUS_RDZV_CA_FILE="$tls_ca"
refused expired "CHORUS_RDZV_CERT_FILE=$tls/expired.pem: the certificate expired on" \
  CHORUS_RDZV_CA_FILE="$tls_ca" CHORUS_RDZV_CERT_FILE="$tls/expired.pem" CHORUS_RDZV_KEY_FILE="$tls/expired.key"
refused wrong_key "CHORUS_RDZV_KEY_FILE=$tls/server.key: not the key of CHORUS_RDZV_CERT_FILE" \
  CHORUS_RDZV_CA_FILE="$tls_ca" CHORUS_RDZV_CERT_FILE="$tls_cert" CHORUS_RDZV_KEY_FILE="$tls/server.key"
grep -q "any of $(sed 's/,/, /g' <<< "$endpoint") (CHORUS_RDZV_ENDPOINT)" "$work/wrong_ca.out" ||
  fail "wrong_ca: the error does not name the three endpoints"

# b. one member of three killed while the job trains, then a worker
tls_env=(CHORUS_RDZV_CA_FILE="$tls_ca" CHORUS_RDZV_CERT_FILE="$tls_cert" CHORUS_RDZV_KEY_FILE="$tls_key")
start_workers cluster 3 200 "${tls_env[@]}"
if wait_size cluster 3 20; then
  kill -9 "${etcd_pids[1]}"; wait "${etcd_pids[1]}" 2> /dev/null
  member_killed_at="$(date +%s.%N)"
  sleep 2
  steps_after="$(cat "$work"/cluster.*.out | awk -v t="$member_killed_at" '$1 == "STEP" && substr($5, 3) > t' | wc -l)"
  resets="$(cat "$work"/cluster.*.out | grep -c '^RESET')"
  [[ "$steps_after" -gt 0 ]] || fail "cluster: no step in the 2 s after an etcd member was killed"
  [[ "$resets" -eq 0 ]] || fail "cluster: $resets resets after an etcd member was killed (the world should not change)"
  recovery_limit=3 kill_worker cluster other &&
    echo "cluster: passed (etcd member 1 of 3 killed: $steps_after steps in the next 2 s, then a worker killed)"
else
  tail -n 5 "$work"/cluster.*.out; fail "cluster: no step 20 in a world of 3"
fi

((ok)) && echo "elastic_etcd_tls: all checks passed" || exit 1
