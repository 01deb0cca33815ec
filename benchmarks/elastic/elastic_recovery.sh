#!/usr/bin/env bash
# Elastic recovery, measured beside torchrun's restart in the same run
# (docs/performance.md, "Elastic training"):
#  - kill -9 of one of 4 workers -> the survivors' first completed step:
#    chorusrun's elastic mode (test/elastic/elastic_counter, 4 names of this
#    machine as hosts) against torchrun --max_restarts of the same job on
#    PyTorch DDP's gloo (ddp_counter.py), which restarts every worker;
#  - a host added to the discovery script -> the newcomer's first step;
#  - commit() per step for ResNet-18's state (commit_cost.py, 2 ranks).
# usage: elastic_recovery.sh BUILD_DIR [RUNS]    (run from the repository root)
set -uo pipefail
build="$(cd "$1" && pwd)" runs="${2:-3}"
py=/usr/bin/python3
counter="$build/test/elastic/elastic_counter"
chorusrun="$build/launcher/chorusrun"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'pkill -9 -f "^$counter" 2>/dev/null; pkill -9 -f "ddp_counter.py" 2>/dev/null; rm -rf "$work"' EXIT

hosts() { { echo '#!/bin/sh'; for h in "$@"; do echo "echo $h:1"; done; } > "$work/hosts.sh"; chmod +x "$work/hosts.sh"; }
wait_for() { for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
# first_after FILE T PATTERN: seconds from T to the first line matching PATTERN stamped after T
first_after() {
  awk -v t="$2" -v pat="$3" '$0 ~ pat { for (i = 1; i <= NF; i++) if ($i ~ /^t=/) { split($i, a, "=");
    if (a[2] > t) { printf "%.2f", a[2] - t; exit } } }' "$1"
}

chorus_kill() {
  hosts 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4
  "$chorusrun" --min-np 2 --max-np 4 --host-discovery-script "$work/hosts.sh" "$counter" --steps 200 > "$work/c.out" 2>&1 &
  local job=$!
  wait_for "$work/c.out" "STEP 40 " || { echo "chorus: no step 40" >&2; return; }
  local victim; victim="$(pgrep -f "^$counter --steps" | sort -n | sed -n 3p)"
  local t; t="$(date +%s.%N)"
  kill -9 "$victim"
  wait "$job"
  echo "$(first_after "$work/c.out" "$t" "RESET rank=0") $(first_after "$work/c.out" "$t" "STEP .* size=3")"
}

torchrun_kill() {
  "$py" -m torch.distributed.run --nproc_per_node 4 --max_restarts 3 --redirects 1 --tee 1 \
    "$here/ddp_counter.py" 200 > "$work/t.out" 2>&1 &
  local job=$!
  wait_for "$work/t.out" "STEP 40 " || { echo "torchrun: no step 40" >&2; return; }
  local victim; victim="$(pgrep -f "python3 -u .*ddp_counter.py" | sort -n | sed -n 3p)"
  local t; t="$(date +%s.%N)"
  kill -9 "$victim"
  wait "$job"
  echo "- $(first_after "$work/t.out" "$t" "STEP")"
}

chorus_add() {
  hosts 127.0.0.1 127.0.0.2 127.0.0.3
  "$chorusrun" --min-np 2 --max-np 4 --host-discovery-script "$work/hosts.sh" "$counter" --steps 200 > "$work/a.out" 2>&1 &
  local job=$!
  wait_for "$work/a.out" "STEP 40 " || { echo "chorus: no step 40" >&2; return; }
  local t; t="$(date +%s.%N)"
  hosts 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4
  wait "$job"
  echo "$(first_after "$work/a.out" "$t" "STEP .* size=4")"
}

echo "# kill -9 of 1 of 4 workers -> survivors' first step (s); world formed (s)"
echo "run  chorus_first_step  chorus_world_formed  torchrun_first_step"
for r in $(seq "$runs"); do
  read -r formed first <<< "$(chorus_kill)"
  read -r _ tfirst <<< "$(torchrun_kill)"
  echo "$r    $first  $formed  $tfirst"
done
echo "# a host added to discovery -> the newcomer's first step (s; discovery every 1 s)"
for r in $(seq "$runs"); do echo "$r    $(chorus_add)"; done
echo "# commit() per step, ResNet-18 (11.2 M parameters), 2 ranks"
PYTHONPATH="$(pwd)/python" CHORUS_LIBRARY="$build/core/libchorus.so" \
  "$chorusrun" --tcp -np 2 "$py" "$here/commit_cost.py" 20 | grep COMMIT
