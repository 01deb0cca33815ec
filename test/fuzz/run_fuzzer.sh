#!/usr/bin/env bash
# Runs one fuzz target briefly over its seed corpus: FUZZER SEED_DIR SECONDS
# [KEPT_DIR]. KEPT_DIR holds the inputs kept in the source tree (test/fuzz/
# corpus/<target>: those that once found a bug). New inputs go to a scratch
# corpus next to the fuzzer (the seeds stay as written); a crash, sanitizer
# report or failed check exits non-zero and libFuzzer names the input it
# saved (crash-*) in the working directory.
set -euo pipefail
fuzzer=$1 seeds=$2 seconds=$3 kept=${4:-}
[[ -x $fuzzer ]] || { echo "run_fuzzer: $fuzzer is not built (the fuzz_build test builds it)" >&2; exit 1; }
[[ -d $seeds ]] || { echo "run_fuzzer: no seed corpus at $seeds" >&2; exit 1; }
scratch=$(dirname "$fuzzer")/found/$(basename "$fuzzer")
mkdir -p "$scratch"
cd "$(dirname "$fuzzer")"
corpora=("$scratch" "$seeds")
[[ -n $kept && -d $kept ]] && corpora+=("$kept")
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${corpora[@]}"
