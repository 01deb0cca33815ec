# Sourced by run_tests.sh: runs the test command's steps one by one, each
# within its share of CI's time, and prints every step's minutes at the end.
#   ci_step NAME MINUTES COMMAND [ARGS...]
# runs COMMAND (in its own process group, under timeout(1)); a step still
# running after MINUTES is stopped, and the run fails at once naming it, so
# an overrun is caught where it happens instead of by CI's 90-minute wall.
# CHORUS_CI_STEP_SCALE (default 1) multiplies every share: a slower machine
# may give itself more room, never silently.
ci_step_names=()
ci_step_seconds=()
ci_step_results=()

ci_step() {
  local name="$1" minutes="$2"
  shift 2
  local scale="${CHORUS_CI_STEP_SCALE:-1}"
  local limit
  limit=$(awk -v m="$minutes" -v s="$scale" 'BEGIN { printf "%d", m * s * 60 }')
  echo "=== step '$name' (share: $((limit / 60)) min) ==="
  local start=$SECONDS rc=0
  timeout --kill-after=30 "$limit" "$@" || rc=$?
  ci_step_names+=("$name")
  ci_step_seconds+=($((SECONDS - start)))
  if ((rc == 124 || rc == 137)); then
    ci_step_results+=("OVERRAN its share of $((limit / 60)) min")
    echo "run_tests: step '$name' overran its share of $((limit / 60)) min and was stopped" >&2
    exit 124
  fi
  if ((rc != 0)); then
    ci_step_results+=("failed (exit $rc)")
    echo "run_tests: step '$name' failed (exit $rc)" >&2
    exit "$rc"
  fi
  ci_step_results+=("passed")
}

# The table of steps, printed on every exit (passed, failed or overrun).
ci_report() {
  ((${#ci_step_names[@]})) || return 0
  echo
  echo "run_tests: minutes per step"
  local i total=0
  for i in "${!ci_step_names[@]}"; do
    printf '  %-16s %6.1f min  %s\n' "${ci_step_names[$i]}" "$(awk -v s="${ci_step_seconds[$i]}" 'BEGIN { print s / 60 }')" \
      "${ci_step_results[$i]}"
    total=$((total + ci_step_seconds[i]))
  done
  printf '  %-16s %6.1f min\n' "total" "$(awk -v s="$total" 'BEGIN { print s / 60 }')"
}
trap ci_report EXIT
