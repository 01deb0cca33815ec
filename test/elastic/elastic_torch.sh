#!/usr/bin/env bash
# The LibTorch TorchState under chorusrun's elastic mode (elastic_torch.cc):
# three "hosts" (names of this machine); one worker killed with SIGKILL
# mid-training, then a fourth host added: every rank must end on the
# parameters of the same training done alone (momentum carried across both
# resets), and the newcomer among them.
# usage: elastic_torch.sh CHORUSRUN ELASTIC_TORCH
set -uo pipefail
chorusrun="$1" worker="$2"
work="$(mktemp -d)"
trap 'pkill -9 -f "^$worker" 2>/dev/null; rm -rf "$work"' EXIT
hosts() { { echo '#!/bin/sh'; for h in "$@"; do echo "echo $h:1"; done; } > "$work/hosts.sh"; chmod +x "$work/hosts.sh"; }
# until a line matches (60 s at most, and not once the job ended)
wait_for() {
  for _ in $(seq 600); do
    grep -q "$1" "$work/out" && return 0
    kill -0 "$job" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
hosts 127.0.0.1 127.0.0.2 127.0.0.3
"$chorusrun" --min-np 2 --max-np 4 --host-discovery-script "$work/hosts.sh" "$worker" --steps 300 > "$work/out" 2>&1 &
job=$!
ok=1
wait_for "STEP 30 " || { echo "FAIL: no step 30"; ok=0; }
kill -9 "$(pgrep -f "^$worker --steps" | sort -n | sed -n 2p)"
wait_for "STEP [0-9]* rank=1 size=2 " || { echo "FAIL: the survivors did not go on at 2 ranks"; ok=0; }
hosts 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4
wait "$job"
code=$?
grep -v "STEP" "$work/out"
finals="$(grep -c "FINAL .* steps=300 .* OK" "$work/out")"
[[ $code -eq 0 && "$finals" -eq 3 ]] || { tail -20 "$work/out"; echo "FAIL: exit $code, $finals OK FINAL lines (want 3)"; ok=0; }
grep -q "STEP [0-9]* rank=2 size=3 " "$work/out" || { echo "FAIL: the added host never joined"; ok=0; }
[[ "$(grep -o 'sum=[-0-9.]*' "$work/out" | sort -u | wc -l)" -eq 1 ]] || { echo "FAIL: the ranks' models differ"; ok=0; }
((ok)) && echo "elastic_torch: all checks passed" || exit 1
