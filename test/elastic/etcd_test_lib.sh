# What the elastic tests through etcd share (sourced by elastic_etcd.sh and
# elastic_etcd_tls.sh): workers started by hand, waiting for a world's
# steps, the final check, a worker killed and the time until the survivors
# step again. The script that sources it sets:
#   counter   the worker (elastic_counter)
#   work      its scratch folder; pids: every process it started
#   endpoint  CHORUS_RDZV_ENDPOINT for the workers
#   etcd_url  where etcd_get asks (http:// or https://host:port), with
#             tls_ca, tls_cert, tls_key for https
# and defines fail (records a failure, ok=0).

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# etcd_get KEY: the value of KEY ("" when absent), through the JSON gateway.
etcd_get() {
  python3 - "$etcd_url" "$1" "${tls_ca:-}" "${tls_cert:-}" "${tls_key:-}" << 'EOF'
import base64, json, ssl, sys, urllib.request
url, key, ca, cert, keyfile = sys.argv[1:6]
context = None
if url.startswith("https://"):
    context = ssl.create_default_context(cafile=ca or None)
    if cert:
        context.load_cert_chain(cert, keyfile)
body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
answer = json.load(urllib.request.urlopen(url + "/v3/kv/range", body, timeout=5, context=context))
for kv in answer.get("kvs", []):
    print(base64.b64decode(kv.get("value", "")).decode())
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

# kill_worker JOB WHICH: of the 3 workers of JOB started last (in $workers),
# kill -9 the leader (WHICH "leader", the holder of /chorus/<id>/leader) or
# another (WHICH "other"); the 2 others must finish. Prints the time from
# the kill to the survivors' first step in their new world, which must be
# under $recovery_limit seconds: the survivors revoke the lost worker's
# lease, so the next world does not wait for it to end (5 s).
kill_worker() {
  local job="$1" which="$2"
  local leader_pid; leader_pid="$(etcd_get "/chorus/$job/leader" | cut -d: -f2)"
  local victim="" survivors=()
  for p in "${workers[@]}"; do
    if [[ -z "$victim" && ( ("$which" == leader && "$p" == "$leader_pid") || ("$which" == other && "$p" != "$leader_pid") ) ]]; then
      victim="$p"
    else
      survivors+=("$p")
    fi
  done
  [[ -n "$victim" ]] || { fail "$job: no $which among the workers (leader pid '$leader_pid')"; return 1; }
  local killed_at; killed_at="$(date +%s.%N)"
  kill -9 "$victim"
  wait "$victim" 2> /dev/null
  check_final "$job" 2 "${survivors[@]}" || return 1
  local first; first="$(cat "$work/$job".*.out | awk '$1 == "STEP" && $4 == "size=2" {print substr($5, 3)}' | sort -n | head -1)"
  local took; took="$(awk -v a="$first" -v b="$killed_at" 'BEGIN {printf "%.2f", a - b}')"
  if awk -v t="$took" -v limit="${recovery_limit:-3}" 'BEGIN {exit !(t > limit)}'; then
    fail "$job: the survivors' first step came $took s after the kill (more than ${recovery_limit:-3} s)"
    return 1
  fi
  echo "$job: passed (killed the $which, pid $victim; kill -> first step of the survivors: $took s)"
}
