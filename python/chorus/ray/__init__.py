"""Chorus on Ray (docs/clusters.md), horovod.ray's names:

- RayExecutor: one Chorus job on Ray actors in a placement group
  (start / run / execute / execute_single / shutdown).
- ElasticRayExecutor: an elastic job whose workers fill the cluster's free
  slots (min_np..max_np); a lost actor's survivors reset from their commit.
- ChorusConfig: a Ray Train backend whose workers run Chorus, and
  ChorusTrainer, the DataParallelTrainer with it (HorovodTrainer's place).

Needs `ray` (and `ray[train]` for ChorusConfig); the workers meet over
Chorus's TCP rendezvous with a per-job secret, no ssh, no MPI."""
from .elastic import ElasticRayExecutor, ElasticRaySettings
from .executor import RayExecutor, RaySettings
from .outcomes import WorkerFailure


def __getattr__(name):  # these import ray.train, which plain RayExecutor users may not have
    if name in ("ChorusConfig", "ChorusTrainer"):
        from . import train
        return getattr(train, name)
    raise AttributeError(f"module 'chorus.ray' has no attribute {name!r}")


__all__ = ["RayExecutor", "RaySettings", "ElasticRayExecutor", "ElasticRaySettings", "WorkerFailure", "ChorusConfig", "ChorusTrainer"]
