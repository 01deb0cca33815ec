# Sourced by the launcher tests, which define pass, fail, $work and $report
# (rank_report). first_failure_runs RUNS CHORUSRUN [FLAGS...]: at 3 ranks
# rank 0 exits with 3 and rank 2 with 5, at 2 ranks rank 0 with 4 and
# rank 1 with 6, while the others wait in a collective; they fail too once
# it is gone, but chorusrun must return the failing rank's own code and name
# it (RUNS runs each: which process ends first is a race). TMPDIR is
# $work/tmp, so the caller can check that no exit-record folder is left.
first_failure_runs() {
  local runs="$1"
  shift
  mkdir -p "$work/tmp"
  local case np rank code run rc named
  for case in "3 0 3" "3 2 5" "2 0 4" "2 1 6"; do
    read -r np rank code <<< "$case"
    for ((run = 1; run <= runs; ++run)); do
      TMPDIR="$work/tmp" timeout -k 3 120 "$@" -np "$np" "$report" --fail-rank "$rank" --exit-code "$code" \
        > "$work/fault.out" 2> "$work/fault.err"
      rc=$?
      named=$(grep -c "^chorusrun: rank $rank exited with code $code, the first rank to fail" "$work/fault.err")
      [[ $rc -eq $code && $named -eq 1 ]] && pass "np $np: rank $rank exits $code (run $run): chorusrun exits $rc, names it" ||
        fail "np $np: rank $rank exits $code (run $run): chorusrun exit $rc, stderr: $(cat "$work/fault.err")"
    done
  done
}
