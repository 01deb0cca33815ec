#!/usr/bin/env bash
# train_smoke.sh CHORUSRUN TRAIN_FASHION_MNIST: short 2-rank runs of the
# training example: one epoch with a checkpoint, a resumed second epoch that
# must start from exactly that model (same test accuracy), the other
# gradient paths (fp16/bf16 compression, accumulation), and clear failures
# on every rank for a missing, corrupt or unwritable checkpoint.
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

# An interrupted save's temporary file: removed by the next save.
printf 'partial' > "$ckpt.tmp.99999"
run resumed 0 --epochs 2 "${short[@]}" --checkpoint "$ckpt" --resume
resumed=$(accuracy_in resumed "^resumed from $ckpt after epoch 1:")
[[ -n $trained && $trained == "$resumed" ]] ||
  fail "resumed: accuracy of the resumed model '$resumed' differs from the saved one '$trained'"
grep -q '^epoch 1/2' "$work/resumed.log" && fail "resumed: epoch 1 ran again"
grep -q '^epoch 2/2 done' "$work/resumed.log" || fail "resumed: epoch 2 did not run"
grep -q "^checkpoint written: $ckpt (epoch 2)" "$work/resumed.log" || fail "resumed: no checkpoint after epoch 2"
[[ -e $ckpt.tmp.99999 ]] && fail "resumed: the stale temporary file $ckpt.tmp.99999 is still there"

# Resumed past --epochs: nothing trains, and the final line counts the
# checkpoint's epochs.
run past_epochs 0 --epochs 1 "${short[@]}" --checkpoint "$ckpt" --resume
grep -q '^final test accuracy [0-9.]* after 2 epochs' "$work/past_epochs.log" ||
  fail "past_epochs: final line does not report the checkpoint's 2 epochs"
grep -q '^nothing to train: the checkpoint holds 2 epochs, --epochs is 1' "$work/past_epochs.log" ||
  fail "past_epochs: no 'nothing to train' line"

# A checkpoint changed on disk: refused on every rank, naming the file.
corrupt="$work/corrupt.pt"
cp "$ckpt" "$corrupt"
size=$(stat -c %s "$corrupt")
printf '\xff\x00\xff\x00' | dd of="$corrupt" bs=1 seek=$((size / 2)) conv=notrunc status=none
run corrupt_checkpoint 1 --epochs 3 "${short[@]}" --checkpoint "$corrupt" --resume
for r in 0 1; do
  grep -q "error (rank $r): --resume: $corrupt: corrupt: the SHA-256" "$work/corrupt_checkpoint.log" ||
    fail "corrupt_checkpoint: rank $r did not refuse the file naming it"
done
grep -q '^epoch ' "$work/corrupt_checkpoint.log" && fail "corrupt_checkpoint: training ran"

# A checkpoint in a directory that does not exist: every rank fails before training.
run unwritable_checkpoint 1 --epochs 1 "${short[@]}" --checkpoint "$work/no-such-dir/fashion.pt"
for r in 0 1; do
  grep -q "error (rank $r): --checkpoint: $work/no-such-dir/fashion.pt: cannot write a checkpoint in $work/no-such-dir" \
    "$work/unwritable_checkpoint.log" || fail "unwritable_checkpoint: rank $r did not fail naming the path"
done
grep -q '^epoch ' "$work/unwritable_checkpoint.log" && fail "unwritable_checkpoint: training ran"

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
