"""The environment that makes a process one rank of a Chorus TCP job, for
the cluster-engine integrations that start ranks themselves (chorus.spark,
chorus.ray): torchrun's variables plus the per-job secret."""
import socket


def free_port():
    """A TCP port free on this host now (rank 0 listens on it next)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def local_ranks(hosts, rank):
    """This rank's index among the ranks on its host, and how many there are.
    `hosts`: one host key per rank (an address, or a node id where several
    nodes share an address)."""
    mine = [r for r, h in enumerate(hosts) if h == hosts[rank]]
    return mine.index(rank), len(mine)


def job_env(rank, hosts, master, secret, extra=None, hosts_are_ids=False):
    """The variables for `rank` of len(hosts) ranks; `master`: (address, port)
    where rank 0 listens; `extra`: more variables (CHORUS_* knobs).
    `hosts_are_ids`: the host keys also tell Chorus which ranks share a
    machine (CHORUS_HOST_ID; else it compares host names and boot ids), for
    engines whose nodes may share one machine (Ray's simulated clusters)."""
    local_rank, local_size = local_ranks(hosts, rank)
    env = {"CHORUS_TRANSPORT": "tcp", "RANK": str(rank), "WORLD_SIZE": str(len(hosts)),
           "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(local_size), "MASTER_ADDR": master[0],
           "MASTER_PORT": str(master[1]), "CHORUS_SECRET": secret}
    if hosts_are_ids:
        env["CHORUS_HOST_ID"] = hosts[rank]
    env.update(extra or {})
    return env


def shutdown_chorus():
    """Stops this process's runtime if it runs (a process reused for another
    job: a failed job may have left it)."""
    try:
        from . import basics
        if basics.is_initialized():
            basics.shutdown()
    except Exception:  # noqa: BLE001 (a failed rank's runtime may be gone already)
        pass
