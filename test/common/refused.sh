# Sourced by the launcher tests, which define pass, fail and $work.
# refused LABEL WANT COMMAND...: COMMAND is chorusrun refusing bad input:
# exit code 2, one line on stderr, "chorusrun: error: ..." containing WANT
# (any text when WANT is empty), nothing on stdout (nothing started).
refused() {
  local label="$1" want="$2"
  shift 2
  local err
  err=$("$@" 2>&1 > "$work/refused.out")
  local rc=$?
  if [[ $rc -eq 2 && $(printf '%s\n' "$err" | wc -l) -eq 1 && $err == "chorusrun: error: "*"$want"* &&
        ! -s "$work/refused.out" ]]; then
    pass "refused: $label -> $err"
  else
    fail "refused: $label: exit $rc, stderr '$err', stdout '$(cat "$work/refused.out")'"
  fi
}
