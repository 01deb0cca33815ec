"""One rank of a Chorus job inside a Ray actor: what chorus.ray's
executors and Ray Train backend run on their workers."""
import os
import secrets

from .._job_env import free_port, job_env, shutdown_chorus


class ChorusWorker:
    """A Ray actor's body (chorus.ray wraps it with ray.remote): learns its
    node, takes its rank's environment, holds the executable object, runs
    the driver's functions."""

    def __init__(self):
        self.executable = None

    def node(self):
        return node()

    def free_port(self):
        return free_port()

    def set_env(self, env):
        os.environ.update(env)

    def start_executable(self, executable_cls, args, kwargs):
        if executable_cls is not None:
            self.executable = executable_cls(*args, **kwargs)

    def execute(self, fn):
        return fn(self.executable)

    def run(self, fn, args, kwargs):
        return fn(*args, **kwargs)

    def run_as_member(self, fn, args, kwargs):
        return run_as_member(fn, args, kwargs)

    def shutdown_chorus(self):
        shutdown_chorus()


def start_chorus(env):
    """Sets this process's rank environment and starts Chorus (every rank
    at once: init is collective)."""
    os.environ.update(env)
    from .. import basics
    basics.init()


def node():
    """(node id, node address, GPU ids) of this process: the id groups the
    ranks of one node (a simulated cluster's nodes share an address), the
    address is where rank 0 listens, the GPUs are the ones Ray gave it."""
    import ray
    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), list(ray.get_gpu_ids())


def rank_environments(nodes, master_port, extra):
    """Each rank's job environment (rank i: nodes[i], as node() gave it),
    rank 0 listening on master_port of its node, one new secret for the
    job, CHORUS_HOST_ID the Ray node."""
    node_ids = [node_id for node_id, _, _ in nodes]
    master, secret = (nodes[0][1], master_port), secrets.token_hex(16)
    return [job_env(rank, node_ids, master, secret, extra, hosts_are_ids=True) for rank in range(len(nodes))]


def run_as_member(fn, args, kwargs):
    """An elastic worker's call: (rank, size, result), the rank and world
    size this process had when fn returned (the driver orders the results
    by rank and knows from the size when the last world has returned)."""
    result = fn(*args, **kwargs)
    from .. import basics
    if not basics.is_initialized():
        return -1, 0, result
    return basics.rank(), basics.size(), result
