#!/usr/bin/env bash
# Elastic jobs without chorusrun, their rendezvous in a real etcd
# (docs/elastic.md, "Without chorusrun: etcd"): this script starts etcd on
# free ports with a data directory of its own, and the workers
# (elastic_counter) by hand with CHORUS_RDZV_* and CHORUS_SECRET.
#  a1. kill -9 a worker that does not lead: the 2 others finish, every FINAL
#      line OK (no committed step lost or doubled), the models equal, their
#      first step in the new world within 3 s of the kill (they revoke the
#      lost worker's lease rather than wait for its 5 s to end).
#  a2. the same, killing the leader (the holder of /chorus/<id>/leader):
#      another member takes over from the keys, as quickly.
#  b.  etcd stopped and started again (same data directory) mid-training,
#      no member changing: the job goes on and finishes in its one world.
#  c.  2 workers with CHORUS_ELASTIC_MIN_NP=3, CHORUS_ELASTIC_TIMEOUT=3: both
#      fail, naming CHORUS_ELASTIC_MIN_NP.
#  d.  an endpoint where no etcd listens (one, then two: both named), a bad
#      entry in a list of endpoints, an unknown backend: errors naming the
#      variable.
#  e.  a worker started while 2 train: told through the hosts key, all
#      three go on in a world of 3 from the same commit.
#  f.  etcd's authentication on: workers with the user and password meet;
#      a wrong password fails naming CHORUS_RDZV_USER and CHORUS_RDZV_PASSWORD.
# TLS, client certificates and a cluster of three: elastic_etcd_tls.sh.
# Exit 77 (ctest: skipped) when etcd is not installed.
# usage: elastic_etcd.sh ELASTIC_COUNTER
set -uo pipefail
counter="$1"
if ! command -v etcd > /dev/null; then
  echo "SKIP: etcd is not installed (Debian: apt-get install etcd-server; scripts/install_deps.sh does)"
  exit 77
fi
work="$(mktemp -d)"
pids=()  # every process this script started
etcd_pid=""
cleanup() {
  for p in "${pids[@]}" $etcd_pid; do kill -9 "$p" 2> /dev/null && wait "$p" 2> /dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
ok=1
fail() { echo "FAIL: $*"; ok=0; }
source "$(dirname "${BASH_SOURCE[0]}")/etcd_test_lib.sh"

client_port="$(free_port)" peer_port="$(free_port)"
endpoint="127.0.0.1:$client_port"
etcd_url="http://$endpoint"

start_etcd() {
  etcd --name chorus-test --data-dir "$work/etcd" \
    --listen-client-urls "http://$endpoint" --advertise-client-urls "http://$endpoint" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "chorus-test=http://127.0.0.1:$peer_port" >> "$work/etcd.log" 2>&1 &
  etcd_pid=$!
  for _ in $(seq 100); do
    (exec 3<> "/dev/tcp/127.0.0.1/$client_port") 2> /dev/null && return 0
    sleep 0.1
  done
  tail -20 "$work/etcd.log"; fail "etcd did not start"; exit 1
}

# etcd_post PATH JSON: one request to the gateway, as root once authentication is on.
etcd_post() {
  python3 - "$endpoint" "$1" "$2" << 'EOF'
import json, sys, urllib.request
base = "http://%s" % sys.argv[1]
headers = {}
try:
    token = json.load(urllib.request.urlopen(base + "/v3/auth/authenticate",
                                             b'{"name":"root","password":"rootpw"}', timeout=5))["token"]
    headers["Authorization"] = token
except Exception:
    pass  # authentication is off
urllib.request.urlopen(urllib.request.Request(base + sys.argv[2], sys.argv[3].encode(), headers), timeout=5).read()
EOF
}

# kill_case JOB WHICH: 3 workers, one killed at step 20 (kill_worker).
kill_case() {
  start_workers "$1" 3 160
  wait_size "$1" 3 20 || { fail "$1: no step 20 in a world of 3"; return; }
  kill_worker "$1" "$2"
}

start_etcd

# a. a worker killed mid-training, then the leader
kill_case kill_other other
kill_case kill_leader leader

# b. etcd stopped and started again while the world trains
start_workers restart 3 200
if wait_size restart 3 20; then
  kill -TERM "$etcd_pid"; wait "$etcd_pid" 2> /dev/null
  stopped_at="$(date +%s.%N)"
  sleep 3
  steps_while_away="$(cat "$work"/restart.*.out | awk -v t="$stopped_at" '$1 == "STEP" && substr($5, 3) > t' | wc -l)"
  start_etcd
  if check_final restart 3 "${workers[@]}"; then
    resets="$(cat "$work"/restart.*.out | grep -c '^RESET')"
    [[ "$resets" -eq 0 ]] || fail "restart: $resets resets (the world should not change)"
    [[ "$steps_while_away" -gt 0 ]] || fail "restart: no step while etcd was away"
    echo "restart: passed ($steps_while_away steps printed in the 3 s etcd was away)"
  fi
else
  fail "restart: no step 20 in a world of 3"
fi

# c. too few workers: both fail past the timeout, naming the variable
(  # its own stderr: the shell's "Aborted" notes about the failing workers are not news
  start_workers few 2 50 CHORUS_ELASTIC_MIN_NP=3 CHORUS_ELASTIC_TIMEOUT=3
  failed=0
  for p in "${workers[@]}"; do wait "$p" || ((++failed)); done
  exit $((2 - failed))
) 2> /dev/null || fail "few: a worker exited 0"
for f in "$work"/few.*.out; do
  grep -q "CHORUS_ELASTIC_MIN_NP" "$f" || { cat "$f"; fail "few: $(basename "$f") does not name CHORUS_ELASTIC_MIN_NP"; }
done
((ok)) && echo "few: passed ($(grep -ho 'only 2 workers.*' "$work"/few.1.out | head -1))"

# d. nobody at the endpoint; a backend that does not exist
dead="127.0.0.1:$(free_port)"
(CHORUS_RDZV_BACKEND=etcd CHORUS_RDZV_ENDPOINT="$dead" CHORUS_RDZV_ID=nobody timeout 60 "$counter" --steps 1 \
  > "$work/dead.out" 2>&1; exit $?) 2> /dev/null && fail "dead: exit 0"
grep -q "could not reach etcd at $dead (CHORUS_RDZV_ENDPOINT)" "$work/dead.out" || { cat "$work/dead.out"; fail "dead: no clear error"; }
dead2="127.0.0.1:$(free_port)"
(CHORUS_RDZV_BACKEND=etcd CHORUS_RDZV_ENDPOINT="$dead, http://$dead2" CHORUS_RDZV_ID=nobody timeout 60 "$counter" \
  --steps 1 > "$work/dead2.out" 2>&1; exit $?) 2> /dev/null && fail "dead2: exit 0"
grep -q "could not reach etcd at any of $dead, $dead2 (CHORUS_RDZV_ENDPOINT): $dead: .*; $dead2: " "$work/dead2.out" ||
  { cat "$work/dead2.out"; fail "dead2: the error does not name both endpoints"; }
(CHORUS_RDZV_BACKEND=etcd CHORUS_RDZV_ENDPOINT="$endpoint,localhost:99999" CHORUS_RDZV_ID=bad timeout 60 "$counter" \
  --steps 1 > "$work/entry.out" 2>&1; exit $?) 2> /dev/null && fail "entry: exit 0"
grep -q "CHORUS_RDZV_ENDPOINT=.*'localhost:99999' (entry 2): the port is not 1..65535" "$work/entry.out" || { cat "$work/entry.out"; fail "entry: no clear error"; }
(CHORUS_RDZV_BACKEND=zookeeper CHORUS_RDZV_ENDPOINT="$endpoint" CHORUS_RDZV_ID=x timeout 60 "$counter" --steps 1 \
  > "$work/backend.out" 2>&1; exit $?) 2> /dev/null && fail "backend: exit 0"
grep -q "CHORUS_RDZV_BACKEND='zookeeper'" "$work/backend.out" || { cat "$work/backend.out"; fail "backend: no clear error"; }
((ok)) && echo "errors: passed ($(grep -o 'could not reach.*' "$work/dead.out" | head -1); $(grep -o 'could not reach.*' "$work/dead2.out" | head -1); $(grep -o "CHORUS_RDZV_ENDPOINT=.*" "$work/entry.out" | head -1); $(grep -o "CHORUS_RDZV_BACKEND='zookeeper'.*" "$work/backend.out" | head -1))"

# e. a worker added mid-training
start_workers added 2 200
first=("${workers[@]}")
if wait_size added 2 20; then
  first_output=3 start_workers added 1 200
  check_final added 3 "${first[@]}" "${workers[@]}" && echo "added: passed (grew from 2 to 3)"
else
  fail "added: no step 20 in a world of 2"
fi

# f. etcd's authentication (last: it stays on)
etcd_post /v3/auth/user/add '{"name":"root","password":"rootpw"}'
etcd_post /v3/auth/role/add '{"name":"root"}'
etcd_post /v3/auth/user/grant '{"user":"root","role":"root"}'
etcd_post /v3/auth/enable '{}'
start_workers auth 2 40 CHORUS_RDZV_USER=root CHORUS_RDZV_PASSWORD=rootpw
check_final auth 2 "${workers[@]}" && echo "auth: passed"
(CHORUS_RDZV_BACKEND=etcd CHORUS_RDZV_ENDPOINT="$endpoint" CHORUS_RDZV_ID=wrong CHORUS_RDZV_USER=root \
  CHORUS_RDZV_PASSWORD=nope timeout 60 "$counter" --steps 1 > "$work/wrong.out" 2>&1; exit $?) 2> /dev/null && fail "wrong: exit 0"
grep -q "CHORUS_RDZV_USER, CHORUS_RDZV_PASSWORD" "$work/wrong.out" || { cat "$work/wrong.out"; fail "wrong: no clear error"; }

((ok)) && echo "elastic_etcd: all checks passed" || exit 1
