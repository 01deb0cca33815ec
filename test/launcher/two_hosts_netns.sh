#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair,
# each with its own address (which exists only inside the namespaces made
# here, removed on exit). chorusrun runs in the first namespace and starts
# one rank on each host, reaching the second through an rsh agent that
# enters its namespace. The ranks allreduce across the hosts and must see
# local_rank/local_size 0/1 and cross_rank/cross_size r/2.
# usage: two_hosts_netns.sh CHORUSRUN RANK_REPORT    (needs root and `ip`)
set -euo pipefail
chorusrun="$1" report="$2"
source "$(dirname "${BASH_SOURCE[0]}")/../common/netns_pair.sh" chorus 10.231

# Open MPI starts its daemon on a remote host as: AGENT HOST COMMAND...
cat > "$work/netns_rsh" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  $ha) ns=$nsa ;;
  $hb) ns=$nsb ;;
  *) echo "netns_rsh: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$work/netns_rsh"

ip netns exec "$nsa" "$chorusrun" -np 2 -H "$ha:1,$hb:1" --verbose \
  --mpi-args "--mca plm_rsh_agent $work/netns_rsh --mca oob_tcp_if_include $net.0/24 --mca btl_tcp_if_include $net.0/24 -x PATH -x LD_LIBRARY_PATH" \
  "$report" > "$work/out" 2>&1 || { cat "$work/out"; echo "two_hosts_netns: the job failed"; exit 1; }
cat "$work/out"
ok=1
for r in 0 1; do
  want="REPORT rank=$r size=2 local_rank=0 local_size=1 cross_rank=$r cross_size=2 sum=3 "
  grep -qF "$want" "$work/out" || { echo "FAIL: rank $r: want '$want...'"; ok=0; }
done
# The two ranks really ran in the two namespaces.
expected="$(ip netns exec "$nsa" readlink /proc/self/ns/net) $(ip netns exec "$nsb" readlink /proc/self/ns/net)"
seen="$(grep -o '^REPORT rank=0 .*netns=[^ ]*' "$work/out" | sed 's/.*netns=//') $(grep -o '^REPORT rank=1 .*netns=[^ ]*' "$work/out" | sed 's/.*netns=//')"
[[ "$seen" == "$expected" ]] || { echo "FAIL: ranks ran in namespaces '$seen', want '$expected'"; ok=0; }
# Shared memory spans one host only: forcing it here fails on every rank with
# a message that says why (auto above went without it).
if ip netns exec "$nsa" "$chorusrun" -np 2 -H "$ha:1,$hb:1" --allreduce-algo shm \
  --mpi-args "--mca plm_rsh_agent $work/netns_rsh --mca oob_tcp_if_include $net.0/24 --mca btl_tcp_if_include $net.0/24 -x PATH -x LD_LIBRARY_PATH" \
  "$report" > "$work/shm_out" 2>&1; then
  cat "$work/shm_out"; echo "FAIL: CHORUS_ALLREDUCE_ALGO=shm across two hosts did not fail"; ok=0
elif [[ "$(grep -c "CHORUS_ALLREDUCE_ALGO=shm needs every rank on one host" "$work/shm_out")" -lt 1 ]]; then
  cat "$work/shm_out"; echo "FAIL: forced shm across hosts failed without naming why"; ok=0
fi
((ok)) && echo "two_hosts_netns: all checks passed" || exit 1
