"""Chorus as a Ray Train backend: ChorusConfig (the BackendConfig) and
ChorusTrainer (a DataParallelTrainer with it, as HorovodTrainer was). The
backend gives each worker of Ray Train's worker group its rank's
environment and starts Chorus on every worker before train_loop_per_worker
runs (chorus.torch's init() in the loop finds it running); it stops Chorus
when the group ends. A worker group Ray Train restarts (a failure under
FailureConfig(max_failures), an elastic ScalingConfig) is a new Chorus job."""
from dataclasses import dataclass, field

from ray.train.backend import Backend, BackendConfig

from .._job_env import free_port, shutdown_chorus
from .worker import node, rank_environments, start_chorus


@dataclass
class ChorusConfig(BackendConfig):
    """`timeout_s`: the ranks' rendezvous (CHORUS_RENDEZVOUS_TIMEOUT_SECONDS);
    `env`: more variables for every worker (CHORUS_* knobs)."""
    timeout_s: float = 300
    env: dict = field(default_factory=dict)

    @property
    def backend_cls(self):
        return _ChorusBackend

    def to_dict(self):
        return {"timeout_s": self.timeout_s}


class _ChorusBackend(Backend):
    share_cuda_visible_devices = True  # every worker of a node sees its GPUs: local_rank() picks one
    def on_start(self, worker_group, backend_config):
        import ray
        nodes = worker_group.execute(node)
        extra = {"CHORUS_RENDEZVOUS_TIMEOUT_SECONDS": f"{backend_config.timeout_s:g}", **backend_config.env}
        envs = rank_environments(nodes, worker_group.execute_single(0, free_port), extra)
        ray.get([worker_group.execute_single_async(rank, start_chorus, env) for rank, env in enumerate(envs)])

    def on_shutdown(self, worker_group, backend_config):
        worker_group.execute(shutdown_chorus)


def _data_parallel_trainer():
    """Ray Train's DataParallelTrainer of the API in use (V2 by default
    since Ray 2.51; RAY_TRAIN_V2_ENABLED=0 the old one)."""
    try:
        from ray.train.v2._internal.constants import is_v2_enabled
    except ImportError:  # a Ray before Train V2
        is_v2_enabled = None
    if is_v2_enabled and is_v2_enabled():
        from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer
    else:
        from ray.train.data_parallel_trainer import DataParallelTrainer
    return DataParallelTrainer


class ChorusTrainer(_data_parallel_trainer()):
    """A DataParallelTrainer whose workers run Chorus (chorus.torch,
    chorus.tensorflow, chorus.jax, chorus):

        trainer = ChorusTrainer(train_loop, scaling_config=ray.train.ScalingConfig(num_workers=2))
        result = trainer.fit()
    """

    def __init__(self, train_loop_per_worker, *, chorus_config=None, **trainer_args):
        super().__init__(train_loop_per_worker, backend_config=chorus_config or ChorusConfig(), **trainer_args)
