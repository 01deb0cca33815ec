#!/usr/bin/env bash
# Settings that must agree, set differently per rank, over the TCP transport
# (as test/mpi's settings_mismatch_values_npN under mpirun): init() fails on
# every rank, no hang, with the message naming each differing setting and
# its value per rank (chorus_settings_mismatch checks the message and exits
# 0 only then). Every rank must see it, not the loss of a rank that saw it
# first and left.
#   tcp_settings_mismatch.sh SETTINGS_MISMATCH
set -uo pipefail
program=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
# mismatch NP RANK_SETUP EXPECTED...: RANK_SETUP is shell run in each rank
# before the program (it sees $RANK).
mismatch() {
  local np=$1 setup=$2
  shift 2
  timeout -k 3 60 "$here/run_tcp_job.sh" "$np" sh -c "$setup; exec \"\$0\" \"\$@\"" "$program" "$@" > "$out" 2>&1
  local rc=$? ok=1 r
  for ((r = 0; r < np; r++)); do
    grep -q "^\[$r\] settings_mismatch: init refused as expected" "$out" || ok=0
  done
  if [[ $rc -eq 0 && $ok -eq 1 ]]; then
    echo "ok: $np ranks all refused: $1"
  else
    echo "FAIL: $np ranks, exit $rc:"
    cat "$out"
    failed=1
  fi
}
mismatch 2 'if [ "$RANK" = 0 ]; then export CHORUS_CACHE_CAPACITY=8; else export CHORUS_CACHE_CAPACITY=16; fi' \
  "CHORUS_CACHE_CAPACITY is 8 on rank 0 and 16 on rank 1"
mismatch 3 'if [ "$RANK" = 2 ]; then export CHORUS_ALLREDUCE_ALGO=mpi; else export CHORUS_ALLREDUCE_ALGO=ring CHORUS_RING_SEGMENT_BYTES=4096; fi' \
  "CHORUS_ALLREDUCE_ALGO is ring on ranks 0, 1 and mpi on rank 2" \
  "CHORUS_RING_SEGMENT_BYTES is 4096 on ranks 0, 1 and 1048576 on rank 2"
# A rank of another build (CHORUS_TEST_WIRE_FORMAT plays one): named with
# each build before any setting is compared.
mismatch 3 'if [ "$RANK" = 1 ]; then export CHORUS_TEST_WIRE_FORMAT=0; fi' \
  "different Chorus builds" "(wire format 0) on rank 1" "on ranks 0, 2"
exit "$failed"
