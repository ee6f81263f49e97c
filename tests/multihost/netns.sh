# Two "hosts" on one machine: network namespaces joined by a veth pair (sourced by the multi-host
# tests). Names carry the shell's pid so that concurrent or leftover runs do not collide; the
# teardown runs on every exit, because a leftover namespace would break the next run.
#   netns_up     creates $NS_A (10.99.0.1, $VETH_A) and $NS_B (10.99.0.2, $VETH_B), and a
#                scratch folder $work; both go on exit
#   netns_down   deletes both (idempotent)
#   netns_require_or_skip   exits 77 (skip) where namespaces cannot be made, or 1 under CI=true
#   netns_write_mpirun_agent, netns_mpirun   mpirun across both (below); netns_up_for_mpirun
#                does netns_up and writes the agent to $work/agent.sh
NS_A="hvdc_a_$$"
NS_B="hvdc_b_$$"
VETH_A="hva$$"
VETH_B="hvb$$"
ADDR_A=10.99.0.1
ADDR_B=10.99.0.2
SUBNET=10.99.0.0/24

netns_down() {
  ip netns del "$NS_A" 2>/dev/null || true
  ip netns del "$NS_B" 2>/dev/null || true
  ip link del "$VETH_A" 2>/dev/null || true
}

netns_require_or_skip() {
  local why=""
  if [ "$(id -u)" != 0 ]; then
    why="network namespaces need root"
  elif ! command -v ip >/dev/null; then
    why="the ip command (iproute2) is missing"
  elif ! ip netns add "hvdc_probe_$$" 2>/dev/null; then
    why="ip netns add failed (no CAP_SYS_ADMIN in this container?)"
  else
    ip netns del "hvdc_probe_$$"
    return 0
  fi
  exec bash "$(dirname "${BASH_SOURCE[0]}")/../missing_dependency.sh" "multi-host suite: $why"
}

netns_up() {
  work=$(mktemp -d)
  trap 'netns_down; rm -rf "$work"' EXIT
  ip netns add "$NS_A"
  ip netns add "$NS_B"
  ip link add "$VETH_A" type veth peer name "$VETH_B"
  ip link set "$VETH_A" netns "$NS_A"
  ip link set "$VETH_B" netns "$NS_B"
  ip -n "$NS_A" addr add "$ADDR_A/24" dev "$VETH_A"
  ip -n "$NS_B" addr add "$ADDR_B/24" dev "$VETH_B"
  for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
  ip -n "$NS_A" link set "$VETH_A" up
  ip -n "$NS_B" link set "$VETH_B" up
}

# netns_write_mpirun_agent FILE: writes mpirun's remote-launch agent (--mca plm_rsh_agent FILE),
# which mpirun calls as "AGENT HOST COMMAND..." and which enters that host's namespace instead of
# ssh. Each host gets its own identity (HVDC_HOSTNAME): the namespaces share the machine's
# hostname.
netns_write_mpirun_agent() {
  cat >"$1" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in
  $ADDR_A) ns=$NS_A; name=host-a ;;
  $ADDR_B) ns=$NS_B; name=host-b ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns env HVDC_HOSTNAME=\$name sh -c "\$*"
AGENT
  chmod +x "$1"
}

netns_up_for_mpirun() {
  netns_up
  netns_write_mpirun_agent "$work/agent.sh"
}

# netns_mpirun PER_HOST ARGS...: mpirun from host A's namespace with PER_HOST ranks on each host,
# started through the agent (netns_write_mpirun_agent "$work/agent.sh" first), its own traffic
# on the veth's subnet. UCX_TLS=tcp: UCX would otherwise reach the other namespace through shared
# memory (same boot id) and never touch the veth.
netns_mpirun() {
  local per_host=$1
  shift
  ip netns exec "$NS_A" env HVDC_HOSTNAME=host-a \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np $((2 * per_host)) -H "$ADDR_A:$per_host,$ADDR_B:$per_host" --bind-to none \
    --mca plm_rsh_agent "$work/agent.sh" \
    --mca oob_tcp_if_include "$SUBNET" --mca btl_tcp_if_include "$SUBNET" \
    -x UCX_TLS=tcp "$@"
}

# Bytes received on host B's end of the veth.
veth_b_rx_bytes() {
  ip netns exec "$NS_B" cat "/sys/class/net/$VETH_B/statistics/rx_bytes"
}
