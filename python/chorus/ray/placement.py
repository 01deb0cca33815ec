"""Where a chorus.ray job's workers go: a placement group with one bundle
per worker (PACK) or per host (STRICT_SPREAD), ready within a timeout or an
error naming what was asked and what the cluster has."""
from dataclasses import dataclass

from ..errors import ChorusError


@dataclass(frozen=True)
class Layout:
    """How many workers, on how many bundles, and what one worker needs."""
    num_workers: int
    workers_per_bundle: int
    cpus_per_worker: float
    gpus_per_worker: float
    one_bundle_per_host: bool

    @property
    def num_bundles(self):
        return self.num_workers // self.workers_per_bundle

    @property
    def strategy(self):
        return "STRICT_SPREAD" if self.one_bundle_per_host else "PACK"

    def bundle(self):
        bundle = {"CPU": self.cpus_per_worker * self.workers_per_bundle}
        if self.gpus_per_worker:
            bundle["GPU"] = self.gpus_per_worker * self.workers_per_bundle
        return bundle

    def describe(self):
        per_worker = f"{self.cpus_per_worker:g} CPU" + (f", {self.gpus_per_worker:g} GPU" if self.gpus_per_worker else "")
        where = f" on {self.num_bundles} hosts" if self.one_bundle_per_host else ""
        return f"{self.num_workers} workers of {per_worker}{where}"


def layout(num_workers, num_hosts, num_workers_per_host, cpus_per_worker, use_gpu, gpus_per_worker):
    """The workers asked for, checked (horovod.ray's arguments)."""
    if num_hosts is not None:
        if num_workers is not None:
            raise ValueError("chorus.ray: give num_workers, or num_hosts with num_workers_per_host, not both")
        if int(num_hosts) < 1 or int(num_workers_per_host) < 1:
            raise ValueError(f"chorus.ray: num_hosts ({num_hosts}) and num_workers_per_host "
                             f"({num_workers_per_host}) must be >= 1")
        per_bundle, total = int(num_workers_per_host), int(num_hosts) * int(num_workers_per_host)
    else:
        if num_workers is None or int(num_workers) < 1:
            raise ValueError(f"chorus.ray: num_workers must be >= 1, not {num_workers}")
        per_bundle, total = 1, int(num_workers)
    if cpus_per_worker <= 0:
        raise ValueError(f"chorus.ray: cpus_per_worker must be > 0, not {cpus_per_worker}")
    gpus = (1 if gpus_per_worker is None else gpus_per_worker) if use_gpu else 0
    if gpus_per_worker and not use_gpu:
        raise ValueError(f"chorus.ray: gpus_per_worker={gpus_per_worker} needs use_gpu=True")
    return Layout(total, per_bundle, float(cpus_per_worker), float(gpus), num_hosts is not None)


def cluster_words():
    import ray
    total, free = ray.cluster_resources(), ray.available_resources()
    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    return (f"the Ray cluster has {total.get('CPU', 0):g} CPUs ({free.get('CPU', 0):g} free), "
            f"{total.get('GPU', 0):g} GPUs ({free.get('GPU', 0):g} free) on {nodes} node{'s' if nodes != 1 else ''}")


def reserve(shape, timeout_s):
    """A placement group for `shape`, ready; ChorusError naming both what was
    asked and what the cluster has when it is not ready after timeout_s."""
    from ray.util.placement_group import placement_group, remove_placement_group
    group = placement_group([shape.bundle() for _ in range(shape.num_bundles)], strategy=shape.strategy)
    if not group.wait(timeout_seconds=timeout_s):
        words = cluster_words()
        remove_placement_group(group)
        raise ChorusError(f"chorus.ray: {shape.describe()} could not be placed within {timeout_s:g} s "
                          f"(placement_group_timeout_s): {words}")
    return group


def current_group(shape):
    """The placement group this driver runs in, when it has room for `shape`;
    None when it runs in none."""
    from ray.util import get_current_placement_group
    group = get_current_placement_group()
    if group is None:
        return None
    if len(group.bundle_specs) < shape.num_bundles:
        raise ChorusError(f"chorus.ray: the current placement group has {len(group.bundle_specs)} bundles, "
                          f"{shape.describe()} need {shape.num_bundles} (use_current_placement_group=False "
                          "makes a group of their own)")
    return group
