#!/usr/bin/env bash
# Elastic jobs without chorusrun, their rendezvous in a real etcd
# (docs/elastic.md, "Without chorusrun: etcd"): this script starts etcd on
# free ports with a data directory of its own, and the workers
# (elastic_counter) by hand with CHORUS_RDZV_* and CHORUS_SECRET.
#  a1. kill -9 a worker that does not lead: the 2 others finish, every FINAL
#      line OK (no committed step lost or doubled), the models equal.
#  a2. the same, killing the leader (the holder of /chorus/<id>/leader):
#      another member takes over from the keys.
#  b.  etcd stopped and started again (same data directory) mid-training,
#      no member changing: the job goes on and finishes in its one world.
#  c.  2 workers with CHORUS_ELASTIC_MIN_NP=3, CHORUS_ELASTIC_TIMEOUT=3: both
#      fail, naming CHORUS_ELASTIC_MIN_NP.
#  d.  an endpoint where no etcd listens, an unknown backend: errors naming
#      the variable.
#  e.  a worker started while 2 train: told through the hosts key, all
#      three go on in a world of 3 from the same commit.
#  f.  etcd's authentication on: workers with the user and password meet;
#      a wrong password fails naming CHORUS_RDZV_USER and CHORUS_RDZV_PASSWORD.
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

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
client_port="$(free_port)" peer_port="$(free_port)"
endpoint="127.0.0.1:$client_port"

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

# etcd_get KEY: the value of KEY ("" when absent), through the JSON gateway.
etcd_get() {
  python3 - "$endpoint" "$1" << 'EOF'
import base64, json, sys, urllib.request
body = json.dumps({"key": base64.b64encode(sys.argv[2].encode()).decode()}).encode()
answer = json.load(urllib.request.urlopen("http://%s/v3/kv/range" % sys.argv[1], body, timeout=5))
for kv in answer.get("kvs", []):
    print(base64.b64decode(kv.get("value", "")).decode())
EOF
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

# start_workers JOB N STEPS [VAR=VALUE...]: N workers of job JOB in the
# background, their outputs JOB.<i>.out from i = $first_output (default 1).
start_workers() {
  local job="$1" n="$2" steps="$3"; shift 3
  local from="${first_output:-1}"
  workers=()
  for i in $(seq "$from" $((from + n - 1))); do
    env CHORUS_RDZV_BACKEND=etcd CHORUS_RDZV_ENDPOINT="$endpoint" CHORUS_RDZV_ID="$job" \
      CHORUS_SECRET="etcd-test-secret" "$@" "$counter" --steps "$steps" --step-seconds 0.05 \
      > "$work/$job.$i.out" 2>&1 &
    workers+=($!)
    pids+=($!)
  done
}

# wait_size JOB SIZE STEP: until a worker of JOB printed step STEP (or later) in a world of SIZE (30 s at most).
wait_size() {
  for _ in $(seq 300); do
    cat "$work/$1".*.out 2> /dev/null | awk -v n="$3" -v s="size=$2" '$1 == "STEP" && $2 >= n && $4 == s {f = 1} END {exit !f}' &&
      return 0
    sleep 0.1
  done
  return 1
}

# check_final JOB SIZE PIDS...: those workers exit 0, each with an OK FINAL line in a world of SIZE, all equal.
check_final() {
  local job="$1" size="$2"; shift 2
  local bad=0
  for p in "$@"; do wait "$p" 2> /dev/null || bad=1; done
  local finals; finals="$(cat "$work/$job".*.out | grep -c "^FINAL rank=[0-9]* size=$size .* OK")"
  if ((bad)) || [[ "$finals" -ne $# ]] || cat "$work/$job".*.out | grep -q WRONG; then
    tail -n 15 "$work/$job".*.out; fail "$job: $finals OK FINAL lines in a world of $size (want $#)"
    return 1
  fi
  local sums; sums="$(cat "$work/$job".*.out | grep -o 'steps=[0-9]* checksum=[0-9.]*' | sort -u | wc -l)"
  [[ "$sums" -eq 1 ]] || { fail "$job: the workers ended with different models"; return 1; }
  return 0
}

# kill_case JOB WHICH: WHICH is "leader" or "other"; prints the time from the
# kill to the survivors' first step in their new world.
kill_case() {
  local job="$1" which="$2"
  start_workers "$job" 3 160
  wait_size "$job" 3 20 || { fail "$job: no step 20 in a world of 3"; return; }
  local leader_pid; leader_pid="$(etcd_get "/chorus/$job/leader" | cut -d: -f2)"
  local victim="" survivors=()
  for p in "${workers[@]}"; do
    if [[ -z "$victim" && ( ("$which" == leader && "$p" == "$leader_pid") || ("$which" == other && "$p" != "$leader_pid") ) ]]; then
      victim="$p"
    else
      survivors+=("$p")
    fi
  done
  [[ -n "$victim" ]] || { fail "$job: no $which among the workers (leader pid '$leader_pid')"; return; }
  local killed_at; killed_at="$(date +%s.%N)"
  kill -9 "$victim"
  wait "$victim" 2> /dev/null
  check_final "$job" 2 "${survivors[@]}" || return
  local first; first="$(cat "$work/$job".*.out | awk '$1 == "STEP" && $4 == "size=2" {print substr($5, 3)}' | sort -n | head -1)"
  echo "$job: passed (killed the $which, pid $victim; kill -> first step of the survivors: $(awk -v a="$first" -v b="$killed_at" 'BEGIN {printf "%.2f", a - b}') s)"
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
(CHORUS_RDZV_BACKEND=zookeeper CHORUS_RDZV_ENDPOINT="$endpoint" CHORUS_RDZV_ID=x timeout 60 "$counter" --steps 1 \
  > "$work/backend.out" 2>&1; exit $?) 2> /dev/null && fail "backend: exit 0"
grep -q "CHORUS_RDZV_BACKEND='zookeeper'" "$work/backend.out" || { cat "$work/backend.out"; fail "backend: no clear error"; }
((ok)) && echo "errors: passed ($(grep -o 'could not reach.*' "$work/dead.out" | head -1); $(grep -o "CHORUS_RDZV_BACKEND='zookeeper'.*" "$work/backend.out" | head -1))"

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
