# Sourced by the multi-host tests: two "hosts" on one machine, two network
# namespaces joined by a veth pair, each with an address that exists only
# inside them; all of it, and the scratch directory $work, removed on exit.
# usage: source netns_pair.sh NAME_PREFIX SUBNET_PREFIX   (e.g. chorus 10.231)
# sets: nsa nsb (the namespaces), net (their /24), ha hb (their addresses), work.
netns_prefix="$1" subnet="$2"
tag=$(( $$ % 200 + 20 ))
nsa="${netns_prefix}_a_$$" nsb="${netns_prefix}_b_$$" va="${netns_prefix:0:3}va$$" vb="${netns_prefix:0:3}vb$$"
net="$subnet.$tag" ha="$net.1" hb="$net.2"
work="$(mktemp -d)"
netns_pair_cleanup() {
  ip netns del "$nsa" 2>/dev/null || true
  ip netns del "$nsb" 2>/dev/null || true
  rm -rf "$work"
}
trap netns_pair_cleanup EXIT
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
