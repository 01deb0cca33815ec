#!/usr/bin/env bash
# chorusrun's per-job secret (docs/security.md): every rank has one, a
# different one each job, and no process it starts shows it on its command
# line (/proc/PID/cmdline, what ps shows): not the local ranks (they get it
# in their environment), not a remote rank's agent nor its shell (stdin),
# not mpirun (-x by name). The "remote" rank runs here through an agent
# that plays ssh; the job passing proves it got the secret.
#   chorusrun_secret.sh CHORUSRUN RANK_REPORT [WITH_MPI]   (WITH_MPI 0: a build
#   without the MPI transport, whose ranks cannot run under mpirun)
set -uo pipefail
chorusrun=$1 report=$2 with_mpi=${3:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
cat > "$dir/agent" <<'AGENT'
#!/bin/sh
# AGENT HOST COMMAND: run COMMAND here, as ssh would run it there.
shift
exec /bin/sh -c "$*"
AGENT
chmod +x "$dir/agent"

# scan NAME: while the job of $dir/NAME runs, every process's command line
# against the secret in a rank's environment.
scan() {
  local name=$1 secret="" pid
  for _ in $(seq 100); do
    pid=$(sed -n 's/.*REPORT rank=0 .* pid=\([0-9]*\).*/\1/p' "$dir/$name" | head -1)
    [[ -n "$pid" ]] && break
    sleep 0.1
  done
  [[ -n "$pid" ]] || { fail "$name: rank 0 never reported"; return; }
  secret=$(tr '\0' '\n' < "/proc/$pid/environ" | sed -n 's/^CHORUS_SECRET=//p')
  [[ ${#secret} -eq 64 ]] || { fail "$name: rank 0's CHORUS_SECRET is '${secret}'"; return; }
  echo "$secret" >> "$dir/secrets"
  # Bash's own matching: a grep would show the secret on its own command line.
  local seen=0 line
  for f in /proc/[0-9]*/cmdline; do
    line=$(tr '\0' ' ' < "$f" 2>/dev/null)
    if [[ "$line" == *"$secret"* ]]; then
      seen=$((seen + 1))
      echo "    | $f: ${line:0:200}"
    fi
  done
  [[ $seen -eq 0 ]] && echo "ok   $name: the secret is on no command line" || fail "$name: on $seen command lines"
}

run() {  # run NAME CHORUSRUN-ARGS...: the job in the background, scanned while it sleeps
  local name=$1
  shift
  timeout 60 "$chorusrun" "$@" "$report" --sleep 3 > "$dir/$name" 2>&1 &
  local job=$!
  scan "$name"
  wait "$job" || fail "$name: exit $?: $(tail -3 "$dir/$name")"
  grep -q "sum=3 " "$dir/$name" || fail "$name: no rank reported the sum of 2 ranks"
}

run tcp_local --tcp -np 2
run tcp_remote --tcp -np 2 -H localhost:1,192.0.2.1:1 --agent "$dir/agent"
if [[ $with_mpi == 1 ]] && command -v mpirun > /dev/null; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 run mpirun -np 2
fi
[[ $(sort -u "$dir/secrets" | wc -l) -eq $(wc -l < "$dir/secrets") ]] || fail "two jobs had the same secret"
[[ $failures -eq 0 ]] && echo "chorusrun_secret: every job had its own secret, on no command line"
exit $((failures > 0))
