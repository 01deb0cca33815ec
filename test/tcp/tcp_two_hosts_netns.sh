#!/usr/bin/env bash
# Two "hosts" on one machine over the TCP transport: two network namespaces
# joined by a veth pair, each with an address that exists only inside them.
# Rank 0 runs in the first and listens at its address; rank 1 runs in the
# second and reaches it there, with torchrun's variables and nothing else
# (no MPI, no launcher). Each namespace has its own CHORUS_HOST_ID, so the
# ranks are on two hosts (no shared memory): the whole multi-rank suite then
# runs over the connection between the namespaces. With CHORUSRUN set, the
# same again started by `chorusrun --tcp -H A:1,B:1 --agent AGENT`, where
# AGENT enters the host's namespace (the role ssh plays between machines).
# usage: [CHORUSRUN=path] tcp_two_hosts_netns.sh PROGRAM [ARGS...]   (needs root and `ip`)
set -uo pipefail
tag=$(( $$ % 200 + 20 ))
nsa="chorus_ta_$$" nsb="chorus_tb_$$" va="ctva$$" vb="ctvb$$"
ha="10.232.$tag.1" hb="10.232.$tag.2"
work="$(mktemp -d)"
cleanup() {
  ip netns del "$nsa" 2>/dev/null || true
  ip netns del "$nsb" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
set -e
ip netns add "$nsa"
ip netns add "$nsb"
ip link add "$va" type veth peer name "$vb"
ip link set "$va" netns "$nsa"
ip link set "$vb" netns "$nsb"
ip -n "$nsa" addr add "$ha/24" dev "$va"
ip -n "$nsb" addr add "$hb/24" dev "$vb"
for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
ip -n "$nsa" link set "$va" up
ip -n "$nsb" link set "$vb" up
set +e

job=(MASTER_ADDR="$ha" MASTER_PORT=29533 WORLD_SIZE=2)
ip netns exec "$nsa" env "${job[@]}" RANK=0 CHORUS_HOST_ID=a timeout 240 "$@" > "$work/0" 2>&1 &
a=$!
ip netns exec "$nsb" env "${job[@]}" RANK=1 CHORUS_HOST_ID=b timeout 240 "$@" > "$work/1" 2>&1 &
b=$!
wait "$a"; rc_a=$?
wait "$b"; rc_b=$?
sed 's/^/[0] /' "$work/0" | tail -4
sed 's/^/[1] /' "$work/1" | tail -4
if [[ $rc_a -ne 0 || $rc_b -ne 0 ]]; then
  echo "tcp_two_hosts_netns: rank 0 exit $rc_a, rank 1 exit $rc_b"
  exit 1
fi
echo "tcp_two_hosts_netns: both hosts passed (by hand)"
[[ -z "${CHORUSRUN:-}" ]] && exit 0

# chorusrun starts a remote rank as AGENT HOST COMMAND.
cat > "$work/netns_agent" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  $ha) ns=$nsa ;;
  $hb) ns=$nsb ;;
  *) echo "netns_agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" env CHORUS_HOST_ID="\$host" /bin/sh -c "\$*"
AGENT
chmod +x "$work/netns_agent"
ip netns exec "$nsa" timeout 240 "$CHORUSRUN" --tcp -np 2 -H "$ha:1,$hb:1" --agent "$work/netns_agent" "$@" \
  > "$work/run" 2>&1
rc=$?
tail -6 "$work/run"
for r in 0 1; do
  grep -q "^\[$r\] All tests passed" "$work/run" || { echo "tcp_two_hosts_netns: chorusrun --tcp: rank $r failed (exit $rc)"; exit 1; }
done
echo "tcp_two_hosts_netns: both hosts passed (chorusrun --tcp --agent)"
