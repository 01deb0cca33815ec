#!/usr/bin/env bash
# Checks that the C/C++ lines (.h .cc .c .cu) changed since a base commit are
# formatted as .clang-format says: only the changed lines, as `git clang-format`
# formats them (clang-format --lines over the ranges of `git diff -U0`), never
# whole files. The base is $CHORUS_FORMAT_BASE, else HEAD~1 (CI on a clean
# clone checks the last commit); the diff runs from the base to the working
# tree, so uncommitted changes to tracked files count too, and a moved file
# counts only its changed lines (git clang-format would format all of it).
# Exits 1 naming the files and lines that are off and the command that fixes
# them; skips (exit 0) without clang-format or without the base commit (a
# shallow or single-commit clone).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base="${CHORUS_FORMAT_BASE:-HEAD~1}"

if ! command -v clang-format >/dev/null; then
  echo "check_format: skipped: clang-format is not installed (scripts/install_deps.sh installs it)"
  exit 0
fi
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  if [[ -n ${CHORUS_FORMAT_BASE:-} ]]; then
    echo "check_format: CHORUS_FORMAT_BASE=$base is not a commit in this clone" >&2
    exit 2
  fi
  echo "check_format: skipped: no base commit $base (a shallow or single-commit clone)"
  exit 0
fi

# file -> "--lines=a:b ..." from the new side of each hunk; a hunk that only
# deletes checks the line before it, as git clang-format does.
declare -A ranges=()
file="" header=0
while IFS= read -r line; do
  case $line in
    "diff --git "*) header=1 ;;
    "+++ b/"*) if ((header)); then file="${line#+++ b/}"; fi ;;
    "@@ "*)
      header=0
      [[ $line =~ ^@@\ -[0-9,]+\ \+([0-9]+)(,([0-9]+))?\ @@ ]] || continue
      start=${BASH_REMATCH[1]} count=${BASH_REMATCH[3]:-1}
      if ((count == 0)); then count=1; fi
      if ((start > 0)); then ranges[$file]+=" --lines=$start:$((start + count - 1))"; fi
      ;;
  esac
done < <(git -c core.quotePath=false diff -U0 -M --no-color --no-ext-diff --src-prefix=a/ --dst-prefix=b/ \
           --diff-filter=ACMR "$base" -- '*.h' '*.cc' '*.c' '*.cu')

formatted="$(mktemp)"
trap 'rm -f "$formatted"' EXIT
checked=0 bad=0
while IFS= read -r file; do
  [[ -n $file && -f $file && ! -L $file ]] || continue
  checked=$((checked + 1))
  # shellcheck disable=SC2086  # the --lines options split on purpose
  if ! clang-format --style=file --fallback-style=none ${ranges[$file]} "$file" >"$formatted"; then
    echo "check_format: clang-format failed on $file" >&2
    exit 2
  fi
  if ! out="$(diff -U0 --label "$file" --label "$file (formatted)" "$file" "$formatted")"; then
    bad=$((bad + 1))
    lines="$(sed -nE 's/^@@ -([0-9]+)(,([0-9]+))? .*/\1 \3/p' <<<"$out" |
             awk '{ n = ($2 == "") ? 1 : $2; print (n <= 1) ? $1 : $1 "-" ($1 + n - 1) }' | paste -sd, -)"
    what="line $lines"
    if [[ $lines == *[,-]* ]]; then what="lines $lines"; fi
    echo "check_format: $file: $what not formatted as .clang-format says:"
    sed 's/^/    /' <<<"$out"
  fi
done < <(printf '%s\n' "${!ranges[@]}" | sort)

if ((bad > 0)); then
  echo "check_format: $bad of $checked changed C/C++ files have unformatted lines since $base; to fix them" \
       "(after git add: it leaves files with unstaged changes alone):"
  echo "    git clang-format $base"
  exit 1
fi
if ((checked == 0)); then
  echo "check_format: no C/C++ lines changed since $base"
  exit 0
fi
files="$checked C/C++ files"
if ((checked == 1)); then files="1 C/C++ file"; fi
echo "check_format: the changed lines of $files since $base are formatted" \
     "(clang-format $(clang-format --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1))"
