#!/usr/bin/env bash
# The TCP transport's performance targets (issue 19), each beside its
# reference measured in the same run, with PASS or MISS:
#   cross    two "hosts" (network namespaces joined by a veth pair), one rank
#            each: 4 KiB latency (target 1), 16 and 64 MiB busbw against
#            MPI_Allreduce over Open MPI's TCP BTL and PyTorch's gloo
#            (target 2), the storm (200 x 16 KiB) against MPI; plain TCP
#            (4 KiB ping-pong, one stream, one stream each way at once: a
#            ring of two moves every byte both ways) and a bare ring in C
#            (bare_ring.c: sockets and sums only) for what the link allows.
#   shaped   the same link shaped to 10 Gbit/s (tc tbf): 64 MiB busbw within
#            15% of the rate (target 3), plain TCP streams through it.
#   startup  4 ranks on this host, launch to the first completed allreduce:
#            chorusrun --tcp against mpirun (target 4).
#   local    2 ranks on this host: latency, storm, 16/64 MiB with the TCP
#            transport's rendezvous against Chorus over MPI (target 5), and
#            over TCP with the control messages on the sockets
#            (CHORUS_TCP_SHM_CONTROL=0) for what shared memory gains;
#            --local-rounds N alternating rounds (3).
#   hierarchical  the two hosts with two ranks each, the link shaped to
#            2 Gbit/s and unshaped: 16/64 MiB busbw with the flat ring and
#            with CHORUS_HIERARCHICAL_ALLREDUCE, alternately (not by default;
#            run it alone: --sections hierarchical).
# Chorus over TCP runs under mpirun too, with CHORUS_TRANSPORT=tcp and
# torchrun's variables from mpirun's rank, so that the same process measures
# MPI_Allreduce on the same buffers (collective_benchmark's reference).
# Each table records the load average beside it: compare ratios within a run.
# usage: sudo scripts/bench_tcp.sh [--build DIR] [--sections cross,shaped,startup,local|hierarchical]
#        [--local-rounds N]
#        (root, ip and tc; 1.5 to 2 minutes for all sections on a 2-core VM)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$root/benchmarks/bench_tcp"
build="./build" sections="cross,shaped,startup,local" local_rounds=3
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --sections) sections="$2"; shift 2 ;;
    --local-rounds) local_rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "bench_tcp.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -d "$build" ]] || { echo "bench_tcp.sh: no build directory '$build' (--build DIR)" >&2; exit 2; }
build="$(cd "$build" && pwd)"
bench="$build/benchmarks/collective_benchmark" chorusrun="$build/launcher/chorusrun"
report="$build/test/launcher/rank_report" bare_ring="$build/benchmarks/bare_ring" py=/usr/bin/python3
for f in "$bench" "$chorusrun" "$report" "$bare_ring"; do
  [[ -x "$f" ]] || { echo "bench_tcp.sh: $f is missing (build collective_benchmark chorusrun rank_report bare_ring)" >&2; exit 2; }
done
for s in ${sections//,/ }; do
  [[ "$s" =~ ^(cross|shaped|startup|local|hierarchical)$ ]] || { echo "bench_tcp.sh: unknown section '$s'" >&2; exit 2; }
done
wants() { [[ ",$sections," == *",$1,"* ]]; }
[[ $(id -u) -eq 0 ]] || { echo "bench_tcp.sh: needs root (network namespaces, tc)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

load() { uptime | sed 's/.*load average: //'; }
# num FILE AWK-PATTERN FIELD: the field of the first line that matches.
num() { awk "$2 { print \$($3); exit }" "$1"; }
verdict() { awk -v ok="$1" 'BEGIN { print (ok ? "PASS" : "MISS") }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
bg_pids=()
work="$(mktemp -d)"
cleanup() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
  [[ -n "${nsa:-}" ]] && netns_pair_cleanup
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# mpirun's rank as torchrun's variables (read only with CHORUS_TRANSPORT=tcp),
# and this network namespace as the host.
cat > "$work/as_rank" <<'EOF'
#!/bin/sh
export RANK="$OMPI_COMM_WORLD_RANK" WORLD_SIZE="$OMPI_COMM_WORLD_SIZE"
export LOCAL_RANK="$OMPI_COMM_WORLD_LOCAL_RANK" LOCAL_WORLD_SIZE="$OMPI_COMM_WORLD_LOCAL_SIZE"
export CHORUS_HOST_ID="netns-$(readlink /proc/self/ns/net | tr -dc 0-9)"
exec "$@"
EOF
chmod +x "$work/as_rank"
port=29650  # rank 0's port in the fresh namespace: nothing else listens there
# CHORUS_* variables of the caller's environment reach every rank (to try a knob).
forward=(); for v in $(compgen -e CHORUS_); do forward+=(-x "$v"); done

# ---------------------------------------------------------------- two hosts
setup_hosts() {
  local keep_work="$work"
  source "$root/test/common/netns_pair.sh" chbench 10.233
  rm -rf "$work"; work="$keep_work"  # netns_pair.sh made a scratch directory of its own
  trap cleanup EXIT
  cat > "$work/netns_rsh" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in $ha) ns=$nsa ;; $hb) ns=$nsb ;; *) echo "netns_rsh: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
  chmod +x "$work/netns_rsh"
  cross_mpi=(mpirun --bind-to none -np "${cross_np:-2}" -H "$ha:${cross_per_host:-1},$hb:${cross_per_host:-1}" --mca plm_rsh_agent "$work/netns_rsh" --mca btl tcp,self
             --mca oob_tcp_if_include "$net.0/24" --mca btl_tcp_if_include "$net.0/24" -x PATH -x LD_LIBRARY_PATH "${forward[@]}")
  ip netns exec "$nsa" "$py" "$here/tcp_stream.py" serve 5201 & bg_pids+=($!)
  ip netns exec "$nsb" "$py" "$here/tcp_stream.py" serve 5201 & bg_pids+=($!)
  sleep 0.5
}

# bench_cross OUT ARGS...: collective_benchmark across the hosts over the TCP transport.
bench_cross() {
  local out="$1"; shift
  port=$((port + 1))
  ip netns exec "$nsa" timeout 300 "${cross_mpi[@]}" -x CHORUS_TRANSPORT=tcp -x MASTER_ADDR="$ha" \
    -x MASTER_PORT="$port" "$work/as_rank" "$bench" "$@" > "$out" 2>&1 \
    || { cat "$out"; echo "bench_tcp.sh: the benchmark across the hosts failed" >&2; exit 1; }
}

gloo_cross() {
  port=$((port + 1))
  local r ns dev pids=()
  for r in 0 1; do
    ns=$nsa dev=$va; ((r == 1)) && ns=$nsb dev=$vb
    ip netns exec "$ns" env MASTER_ADDR="$ha" MASTER_PORT="$port" RANK=$r WORLD_SIZE=2 GLOO_SOCKET_IFNAME="$dev" \
      timeout 300 "$py" "$here/gloo_allreduce.py" --bytes 16777216,67108864 --iters 5 > "$work/gloo.$r" 2>&1 &
    pids+=($!)
  done
  for r in 0 1; do
    wait "${pids[$r]}" || { cat "$work"/gloo.*; echo "bench_tcp.sh: gloo rank $r failed" >&2; exit 1; }
  done
}

# The bare ring (bare_ring.c) across the hosts, one design: its lines in $work/bare.
bare_ring_cross() {
  local design="$1" bytes
  for bytes in 16777216 67108864; do
    port=$((port + 1))
    ip netns exec "$nsa" timeout 120 "$bare_ring" server "$ha" "$port" "$bytes" 15 "$design" >> "$work/bare" &
    local server=$!
    bg_pids+=("$server")
    ip netns exec "$nsb" timeout 120 "$bare_ring" client "$ha" "$port" "$bytes" 15 "$design" ||
      { echo "bench_tcp.sh: bare_ring $design failed" >&2; exit 1; }
    wait "$server" || { echo "bench_tcp.sh: bare_ring $design failed" >&2; exit 1; }
  done
}

# One plain TCP stream each way at once (two processes), for 2 s: the slower one's GB/s.
both_ways() {
  ip netns exec "$nsa" "$py" "$here/tcp_stream.py" stream "$hb" 5201 2 > "$work/a_to_b" & local a=$!
  ip netns exec "$nsb" "$py" "$here/tcp_stream.py" stream "$ha" 5201 2 > "$work/b_to_a"
  wait $a
  awk '{ v[NR] = $4 } END { print (v[1] < v[2] ? v[1] : v[2]) }' "$work/a_to_b" "$work/b_to_a"
}
sweep_row() { num "$1" "\$1 == $2" "$3"; }  # field 4: chorus us, 6: busbw, 9: MPI us, 11: MPI busbw

section_cross() {
  echo "# two hosts (netns $nsa, $nsb over veth), one rank each; load before: $(load)"
  ip netns exec "$nsa" "$py" "$here/tcp_stream.py" pingpong "$hb" 5201 2000 > "$work/pingpong"
  ip netns exec "$nsa" "$py" "$here/tcp_stream.py" stream "$hb" 5201 2 > "$work/stream"
  local both; both="$(both_ways)"
  bench_cross "$work/cross" --sections sweep,storm,latency --buffers heap --min-bytes 16777216 \
    --max-bytes 67108864 --iters 5 --storm-rounds 10 --latency-iters 500 --latency-barrier chorus --idle-seconds 1
  gloo_cross
  bare_ring_cross poll
  bare_ring_cross threads
  local c="$work/cross" g="$work/gloo.0" l; l="$(load)"
  local lat; lat="$(num "$c" '/^chorus \(enqueue/' 'NF-4')"
  echo
  echo "## Target 1: one 4 KiB allreduce across the hosts, median (load $l)"
  echo "(each Chorus call after a one-element Chorus allreduce, each MPI call after MPI_Barrier)"
  echo "| what | µs |"
  echo "| --- | ---: |"
  echo "| Chorus over TCP | $lat |"
  echo "| MPI_Allreduce, Open MPI's TCP BTL | $(num "$c" '/^MPI_Allreduce +median/' 'NF-4') |"
  echo "| plain TCP ping-pong of 4 KiB, round trip | $(num "$work/pingpong" 1 NF-1) |"
  echo "target <= 100 µs: $(verdict "$(awk -v v="$lat" 'BEGIN{print (v <= 100)}')")"
  echo
  echo "## Target 2: 16 and 64 MiB allreduce across the hosts, busbw GB/s (load $l)"
  echo "plain TCP between the hosts: $(cat "$work/stream"); one stream each way at once: $both GB/s each"
  echo "(a ring of two sends and receives every byte at once; the bare ring: bare_ring.c, the same"
  echo " ring in C with nothing but the sockets and the sums, one thread polling / a sender thread, median)"
  echo "| bytes | Chorus over TCP | MPI_Allreduce (TCP BTL) | gloo | plain TCP both ways | bare ring, poll / threads | / MPI | / gloo | / bare ring (best design) | target >= 2x MPI and gloo |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
  local b cb mb gb bp bt
  for b in 16777216 67108864; do
    cb="$(sweep_row "$c" $b 6)" mb="$(sweep_row "$c" $b 11)" gb="$(num "$g" "/^gloo $b /" 8)"
    bp="$(num "$work/bare" "/^bare ring poll $b:/" 7)" bt="$(num "$work/bare" "/^bare ring threads $b:/" 7)"
    echo "| $b | $cb | $mb | $gb | $both | $bp / $bt | $(ratio "$cb" "$mb") | $(ratio "$cb" "$gb") |" \
      "$(ratio "$cb" "$(awk -v p="$bp" -v t="$bt" 'BEGIN { print (p > t ? p : t) }')") |" \
      "$(verdict "$(awk -v c="$cb" -v m="$mb" -v g="$gb" 'BEGIN{print (c >= 2 * m && c >= 2 * g)}')") |"
  done
  echo "2x the higher of MPI and gloo: $(awk -v m="$(sweep_row "$c" 16777216 11)" -v g="$(num "$g" '/^gloo 16777216 /' 8)" \
    'BEGIN { printf "%.2f", 2 * (m > g ? m : g) }') GB/s at 16 MiB, $(awk -v m="$(sweep_row "$c" 67108864 11)" \
    -v g="$(num "$g" '/^gloo 67108864 /' 8)" 'BEGIN { printf "%.2f", 2 * (m > g ? m : g) }') at 64 MiB"
  echo
  echo "## The storm across the hosts: 200 x 16 KiB per round, median ms (load $l)"
  echo "| Chorus over TCP | MPI_Allreduce x 200 | MPI_Allreduce packed by hand | Chorus / 200 calls |"
  echo "| ---: | ---: | ---: | ---: |"
  local cs ms ps
  cs="$(num "$c" '/^chorus, async/' 5)" ms="$(num "$c" '/^MPI_Allreduce x separate/' 5)"
  ps="$(num "$c" '/^MPI_Allreduce x 1, packed/' 7)"
  echo "| $cs | $ms | $ps | $(ratio "$cs" "$ms") |"
  grep -q '#wrong [1-9]' "$c" "$g" && { echo "bench_tcp.sh: wrong results, see above"; cat "$c" "$g"; exit 1; }
}

section_shaped() {
  local rate_gbit=10 q
  for q in "$nsa $va" "$nsb $vb"; do
    set -- $q
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate ${rate_gbit}gbit burst 4mb latency 10ms
  done
  echo; echo "# the veth shaped to ${rate_gbit} Gbit/s both ways (tc tbf); load before: $(load)"
  ip netns exec "$nsa" "$py" "$here/tcp_stream.py" stream "$hb" 5201 2 > "$work/shaped_stream"
  local both; both="$(both_ways)"
  bench_cross "$work/shaped" --sections sweep --buffers heap --min-bytes 67108864 --max-bytes 67108864 --iters 10
  for q in "$nsa $va" "$nsb $vb"; do set -- $q; ip netns exec "$1" tc qdisc del dev "$2" root; done
  local link cb; link="$(awk -v r=$rate_gbit 'BEGIN{print (r / 8)}')" cb="$(sweep_row "$work/shaped" 67108864 6)"
  echo
  echo "## Target 3: 64 MiB allreduce through the shaped link, busbw GB/s (load $(load))"
  echo "| link rate | Chorus over TCP | / link | MPI_Allreduce (TCP BTL) | one plain TCP stream | plain TCP both ways | Chorus / both ways |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  echo "| $link | $cb | $(ratio "$cb" "$link") | $(sweep_row "$work/shaped" 67108864 11) |" \
    "$(awk '{print $4}' "$work/shaped_stream") | $both | $(ratio "$cb" "$both") |"
  echo "target >= 0.85 x link rate: $(verdict "$(awk -v c="$cb" -v l="$link" 'BEGIN{print (c >= 0.85 * l)}')")"
}

# ---------------------------------------------------------------- one host
section_startup() {
  local rounds=5 i t tcp=() mpi=() run=()
  echo; echo "# startup: 4 ranks on this host, rank_report (init, one allreduce); load before: $(load)"
  for ((i = 0; i < rounds; i++)); do  # alternately, so drifting load hits both
    t="$("$py" "$here/startup_time.py" 4 "$chorusrun" --tcp -np 4 "$report")" || exit 1; tcp+=(${t%% *})
    t="$("$py" "$here/startup_time.py" 4 mpirun -np 4 "$report")" || exit 1; mpi+=(${t%% *})
    t="$("$py" "$here/startup_time.py" 4 "$chorusrun" -np 4 "$report")" || exit 1; run+=(${t%% *})
  done
  local mt mm mr; mt="$(echo "${tcp[*]}" | median)" mm="$(echo "${mpi[*]}" | median)" mr="$(echo "${run[*]}" | median)"
  echo
  echo "## Target 4: launch to the first completed allreduce, 4 ranks, median of $rounds, s (load $(load))"
  echo "| chorusrun --tcp | mpirun (Chorus over MPI) | chorusrun (mpirun) | --tcp / mpirun |"
  echo "| ---: | ---: | ---: | ---: |"
  echo "| $mt | $mm | $mr | $(ratio "$mt" "$mm") |"
  echo "target: chorusrun --tcp no slower than mpirun: $(verdict "$(awk -v t="$mt" -v m="$mm" 'BEGIN{print (t <= m)}')")"
}

# bench_local OUT TRANSPORT [VAR=VALUE]: the benchmark at 2 ranks on this host.
bench_local() {
  local env=(-x CHORUS_TRANSPORT="$2") free  # this host's namespace: a port nobody holds
  [[ -n "${3:-}" ]] && env+=(-x "$3")
  free="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  [[ "$2" == tcp ]] && env+=(-x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$free")
  timeout 300 mpirun -np 2 "${env[@]}" "${forward[@]}" "$work/as_rank" "$bench" --sections sweep,storm,latency --buffers heap \
    --min-bytes 16777216 --max-bytes 67108864 --iters 10 --storm-rounds 20 --latency-iters 2000 --idle-seconds 1 \
    > "$1" 2>&1 || { cat "$1"; echo "bench_tcp.sh: the benchmark on one host ($2) failed" >&2; exit 1; }
  grep -q '#wrong [1-9]' "$1" && { cat "$1"; echo "bench_tcp.sh: wrong results" >&2; exit 1; }
}

# local_metrics FILE: latency us, storm ms, 16 MiB us, 64 MiB us; then MPI's.
local_metrics() {
  echo "$(num "$1" '/^chorus \(enqueue/' 'NF-4') $(num "$1" '/^chorus, async/' 5)" \
    "$(sweep_row "$1" 16777216 4) $(sweep_row "$1" 67108864 4)" \
    "$(num "$1" '/^MPI_Allreduce +median/' 'NF-4') $(num "$1" '/^MPI_Allreduce x 1, packed/' 7)" \
    "$(sweep_row "$1" 16777216 9) $(sweep_row "$1" 67108864 9)"
}

section_local() {
  local rounds=$local_rounds i k
  echo; echo "# one host, 2 ranks, Chorus over MPI, over TCP, over TCP with the control messages on the sockets," \
    "alternately, $rounds rounds; load before: $(load)"
  for ((i = 0; i < rounds; i++)); do
    bench_local "$work/local_mpi.$i" mpi; local_metrics "$work/local_mpi.$i" >> "$work/local_mpi"
    bench_local "$work/local_tcp.$i" tcp; local_metrics "$work/local_tcp.$i" >> "$work/local_tcp"
    bench_local "$work/local_sock.$i" tcp CHORUS_TCP_SHM_CONTROL=0
    local_metrics "$work/local_sock.$i" >> "$work/local_sock"
  done
  local names=("4 KiB latency, µs" "storm 200 x 16 KiB, ms" "16 MiB allreduce, µs" "64 MiB allreduce, µs")
  local refs=("MPI_Allreduce" "MPI_Allreduce packed by hand" "MPI_Allreduce" "MPI_Allreduce")
  echo
  echo "## Target 5: one host, medians over $rounds rounds of each (load $(load))"
  echo "| what | Chorus over MPI | Chorus over TCP | TCP / MPI | TCP, control on the sockets (/ MPI) |" \
    "reference (in the MPI runs) | target TCP <= 1.15 x MPI |"
  echo "| --- | ---: | ---: | ---: | ---: | --- | --- |"
  for k in 0 1 2 3; do
    local m t r o
    m="$(awk -v f=$((k + 1)) '{print $f}' "$work/local_mpi" | median)"
    t="$(awk -v f=$((k + 1)) '{print $f}' "$work/local_tcp" | median)"
    o="$(awk -v f=$((k + 1)) '{print $f}' "$work/local_sock" | median)"
    r="$(awk -v f=$((k + 5)) '{print $f}' "$work/local_mpi" | median)"
    echo "| ${names[$k]} | $m | $t | $(ratio "$t" "$m") | $o ($(ratio "$o" "$m")) | ${refs[$k]} $r |" \
      "$(verdict "$(awk -v t="$t" -v m="$m" 'BEGIN{print (t <= 1.15 * m)}')") |"
  done
}

# ------------------------------------------------- hierarchical allreduce
# hier_round TAG: flat ring, then hierarchical, the sweep at 16 and 64 MiB.
hier_round() {
  local h
  for h in 0 1; do
    CHORUS_HIERARCHICAL_ALLREDUCE=$h bench_cross "$work/hier_$1_$h.$2" --sections sweep --buffers heap \
      --min-bytes 16777216 --max-bytes 67108864 --iters 5
    for b in 16777216 67108864; do echo "$(sweep_row "$work/hier_$1_$h.$2" $b 6) $(sweep_row "$work/hier_$1_$h.$2" $b 11)"; done \
      | paste -sd' ' >> "$work/hier_$1_$h"
  done
}

# Two hosts of two ranks: each byte of the flat ring crosses between the
# hosts 1.5 times per direction, of the hierarchical one once.
section_hierarchical() {
  local rounds=3 i q tag
  forward+=(-x CHORUS_HIERARCHICAL_ALLREDUCE)
  echo; echo "# two hosts of 2 ranks each, flat ring against hierarchical, $rounds rounds; load before: $(load)"
  for tag in shaped open; do
    if [[ $tag == shaped ]]; then
      for q in "$nsa $va" "$nsb $vb"; do set -- $q; ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate 2gbit burst 4mb latency 10ms; done
    fi
    for ((i = 0; i < rounds; i++)); do hier_round $tag $i; done
    if [[ $tag == shaped ]]; then for q in "$nsa $va" "$nsb $vb"; do set -- $q; ip netns exec "$1" tc qdisc del dev "$2" root; done; fi
  done
  echo
  echo "## 16 and 64 MiB allreduce, 4 ranks on two hosts, busbw GB/s, medians of $rounds (load $(load))"
  echo "| link | bytes | flat ring | hierarchical | hierarchical / ring | MPI_Allreduce (TCP BTL) |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
  local k f h m
  for tag in shaped open; do
    for k in 0 1; do
      f="$(awk -v c=$((2 * k + 1)) '{print $c}' "$work/hier_${tag}_0" | median)"
      h="$(awk -v c=$((2 * k + 1)) '{print $c}' "$work/hier_${tag}_1" | median)"
      m="$(awk -v c=$((2 * k + 2)) '{print $c}' "$work/hier_${tag}_0" | median)"
      echo "| $([[ $tag == shaped ]] && echo "2 Gbit/s (tbf)" || echo "veth, unshaped") | $((k == 0 ? 16777216 : 67108864)) | $f | $h | $(ratio "$h" "$f") | $m |"
    done
  done
  grep -q '#wrong [1-9]' "$work"/hier_*.* && { echo "bench_tcp.sh: wrong results"; exit 1; }
}

echo "# bench_tcp.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r), build $build"
wants hierarchical && cross_np=4 cross_per_host=2
if wants cross || wants shaped || wants hierarchical; then setup_hosts; fi
wants cross && section_cross
wants shaped && section_shaped
wants startup && section_startup
wants local && section_local
wants hierarchical && section_hierarchical
echo; echo "# done $(date -u '+%H:%M:%S UTC'), load $(load)"
