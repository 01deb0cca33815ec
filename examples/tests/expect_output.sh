#!/usr/bin/env bash
# expect_output.sh REGEX COMMAND [ARGS...]: runs COMMAND, shows its output,
# and passes only if it exits 0 and some output line matches REGEX (ERE).
# (CTest's PASS_REGULAR_EXPRESSION alone would ignore the exit code.)
set -uo pipefail
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if ((rc != 0)); then
  echo "expect_output: FAIL: exit code $rc from: $*" >&2
  exit 1
fi
if ! grep -Eq -- "$regex" <<<"$out"; then
  echo "expect_output: FAIL: no output line matches: $regex" >&2
  exit 1
fi
echo "expect_output: ok"
