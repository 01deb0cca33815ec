#!/usr/bin/env bash
# The multi-rank suites over the TCP transport at NP ranks, one job per
# suite, started by hand with torchrun's variables (LAUNCH=hand:
# run_tcp_job.sh) or by chorusrun --tcp (LAUNCH=path of chorusrun). Every
# rank of every job must exit 0 and say it passed (Catch2's "All tests
# passed", the C test's "all checks passed"); each program also checks that
# it is the rank of the size its launcher said, so a rank that came up alone
# fails instead of passing by itself.
#   run_tcp_suites.sh LAUNCH NP PROGRAM [PROGRAM...]
set -uo pipefail
launch=$1 np=$2
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
for program in "$@"; do
  name=$(basename "$program")
  start=$SECONDS
  if [[ $launch == hand ]]; then
    timeout -k 5 240 "$here/run_tcp_job.sh" "$np" "$program" > "$out" 2>&1
  else
    timeout -k 5 240 "$launch" --tcp -np "$np" "$program" > "$out" 2>&1
  fi
  rc=$?
  ok=1
  [[ $rc -eq 0 ]] || { echo "FAIL: $name at $np ranks: exit $rc"; ok=0; }
  for ((r = 0; r < np; r++)); do
    grep -Eq "^\[$r\] (All tests passed|c_api: all checks passed)" "$out" ||
      { echo "FAIL: $name: rank $r of $np did not pass"; ok=0; }
  done
  if ((ok)); then
    echo "$name: $np ranks passed over TCP ($((SECONDS - start)) s)"
  else
    failed=1
    tail -40 "$out"
  fi
done
exit "$failed"
