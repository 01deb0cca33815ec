#!/usr/bin/env bash
# train_smoke.sh CHORUSRUN TRAIN_FASHION_MNIST: short 2-rank runs of the
# training example: one epoch with a checkpoint, a resumed second epoch that
# must start from exactly that model (same test accuracy), the other
# gradient paths (fp16/bf16 compression, accumulation), and a clear failure
# for a missing checkpoint.
set -uo pipefail
chorusrun=$1
train=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ckpt="$work/fashion.pt"
short=(--max-steps-per-epoch 20 --log-interval 10)
failures=0

fail() {
  echo "train_smoke: FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME EXPECTED_RC ARGS...: runs the job, keeps its output in $work/NAME.log.
# Ranks that stop matching up (a bug) shut down with an error after 60 s
# instead of waiting for CTest's timeout; `timeout` is the last resort.
run() {
  local name=$1 expected=$2
  shift 2
  echo "== $name: $chorusrun -np 2 $train $*"
  timeout -k 10 300 "$chorusrun" -np 2 --stall-check-warning-time-seconds 20 --stall-check-shutdown-time-seconds 60 \
    "$train" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  cat "$work/$name.log"
  [[ $rc == "$expected" ]] || fail "$name: exit code $rc, expected $expected"
}

# The value after "test accuracy" on the first line matching $2 in log $1.
accuracy_in() { grep -E "$2" "$work/$1.log" | head -n1 | sed -E 's/.*test accuracy ([0-9.]+).*/\1/'; }

run first 0 --epochs 1 "${short[@]}" --checkpoint "$ckpt"
grep -q "^checkpoint written: $ckpt (epoch 1)" "$work/first.log" || fail "first: no checkpoint written"
[[ -s $ckpt ]] || fail "first: $ckpt missing or empty"
leftovers=$(find "$work" -name 'fashion.pt.tmp.*' | wc -l)
((leftovers == 0)) || fail "first: temporary checkpoint files left behind"
trained=$(accuracy_in first '^epoch 1/1 done')

run resumed 0 --epochs 2 "${short[@]}" --checkpoint "$ckpt" --resume
resumed=$(accuracy_in resumed "^resumed from $ckpt after epoch 1:")
[[ -n $trained && $trained == "$resumed" ]] ||
  fail "resumed: accuracy of the resumed model '$resumed' differs from the saved one '$trained'"
grep -q '^epoch 1/2' "$work/resumed.log" && fail "resumed: epoch 1 ran again"
grep -q '^epoch 2/2 done' "$work/resumed.log" || fail "resumed: epoch 2 did not run"
grep -q "^checkpoint written: $ckpt (epoch 2)" "$work/resumed.log" || fail "resumed: no checkpoint after epoch 2"

run fp16_accumulate 0 --epochs 1 "${short[@]}" --compression fp16 --batches-per-allreduce 2
grep -q '^epoch 1/1 done' "$work/fp16_accumulate.log" || fail "fp16_accumulate: epoch did not finish"
run bf16 0 --epochs 1 "${short[@]}" --compression bf16
grep -q '^epoch 1/1 done' "$work/bf16.log" || fail "bf16: epoch did not finish"

run missing_checkpoint 1 --epochs 1 "${short[@]}" --checkpoint "$work/none.pt" --resume
grep -q -- "--resume: $work/none.pt: cannot read checkpoint" "$work/missing_checkpoint.log" ||
  fail "missing_checkpoint: no clear error naming the file"

if ((failures > 0)); then
  echo "train_smoke: $failures failure(s)" >&2
  exit 1
fi
echo "train_smoke: ok (trained accuracy $trained, resumed $resumed)"
