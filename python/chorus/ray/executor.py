"""chorus.ray.RayExecutor: a Chorus job on Ray actors, horovod.ray's
RayExecutor API (docs/clusters.md)."""
from dataclasses import dataclass, field

from ..errors import ChorusError
from . import outcomes, placement
from .worker import ChorusWorker, rank_environments

SHUTDOWN_WAIT_SECONDS = 30  # then the workers are ended, their Chorus with them


def _refuse_callbacks(callbacks):
    if callbacks:
        raise ValueError("chorus.ray.RayExecutor: callbacks (horovod.ray's result callbacks) are not supported; "
                         "the results come back in rank order")


@dataclass
class RaySettings:
    """RayExecutor.create_settings(): `timeout_s` bounds the ranks' rendezvous
    (CHORUS_RENDEZVOUS_TIMEOUT_SECONDS), `placement_group_timeout_s` the wait
    for the workers' resources; `env`: more variables for every worker."""
    timeout_s: float = 30
    placement_group_timeout_s: float = 100
    env: dict = field(default_factory=dict)

    def worker_env(self):
        return {"CHORUS_RENDEZVOUS_TIMEOUT_SECONDS": f"{self.timeout_s:g}", **self.env}


class RayExecutor:
    """Runs one Chorus job on Ray actors, one rank each, in a placement group.

        executor = RayExecutor(RayExecutor.create_settings(), num_workers=4)
        executor.start()
        results = executor.run(train, args=(epochs,))   # rank order
        executor.shutdown()
    """

    @staticmethod
    def create_settings(timeout_s=30, ssh_identity_file=None, ssh_str=None, placement_group_timeout_s=100, nics=None,
                        env=None):
        """horovod.ray's settings. The ssh and nics arguments are taken for
        Horovod's scripts and not needed: the workers meet over Chorus's TCP
        rendezvous through Ray, with no ssh."""
        del ssh_identity_file, ssh_str, nics
        return RaySettings(timeout_s, placement_group_timeout_s, dict(env or {}))

    def __init__(self, settings=None, num_workers=None, num_hosts=None, num_workers_per_host=1, cpus_per_worker=1,
                 use_gpu=False, gpus_per_worker=None, use_current_placement_group=True, min_workers=None,
                 max_workers=None, reset_limit=None, cooldown_range=None, elastic_timeout=None,
                 override_discovery=None):
        if any(v is not None for v in (min_workers, max_workers, reset_limit, cooldown_range, elastic_timeout,
                                       override_discovery)):
            raise ValueError("chorus.ray.RayExecutor: an elastic job (min_workers, max_workers, reset_limit, "
                             "cooldown_range, elastic_timeout, override_discovery) runs on "
                             "chorus.ray.ElasticRayExecutor")
        self.settings = settings or RaySettings()
        self._shape = placement.layout(num_workers, num_hosts, num_workers_per_host, cpus_per_worker, use_gpu,
                                       gpus_per_worker)
        self._use_current_group = use_current_placement_group
        self._group, self._own_group, self._workers = None, False, None

    @property
    def num_workers(self):
        return self._shape.num_workers

    def start(self, executable_cls=None, executable_args=None, executable_kwargs=None, extra_env_vars=None):
        """Places the workers, gives each its rank's environment (ranks in
        bundle order; LOCAL_RANK among the workers of its Ray node), then makes
        `executable_cls(*executable_args, **executable_kwargs)` on each."""
        import ray
        if self._workers is not None:
            raise ChorusError("chorus.ray.RayExecutor: start() called twice (shutdown() first)")
        self._place()
        wait = self.settings.placement_group_timeout_s
        try:
            self._workers = [self._make_worker(ray, i) for i in range(self.num_workers)]
            nodes = outcomes.gather([w.node.remote() for w in self._workers], wait, "starting (their actors)")
            self._give_environments(nodes, extra_env_vars)
            outcomes.gather([w.start_executable.remote(executable_cls, tuple(executable_args or ()),
                                                       dict(executable_kwargs or {})) for w in self._workers])
        except BaseException:
            self._stop(graceful=False)  # a rank's executable may wait in init() for one that failed
            raise

    def _give_environments(self, nodes, extra_env_vars):
        """Each rank's job environment; with GPUs, every worker of a node sees
        all of that node's workers' GPUs (as horovod.ray), so that
        local_rank() picks a device among them."""
        port = outcomes.gather([self._workers[0].free_port.remote()])[0]
        envs = rank_environments(nodes, port, {**self.settings.worker_env(), **(extra_env_vars or {})})
        node_gpus = {}
        for node_id, _, gpus in nodes:
            node_gpus.setdefault(node_id, set()).update(str(g) for g in gpus)
        for env, (node_id, _, _) in zip(envs, nodes):
            if node_gpus[node_id]:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(sorted(node_gpus[node_id]))
        outcomes.gather([w.set_env.remote(env) for w, env in zip(self._workers, envs)])

    def _place(self):
        group = placement.current_group(self._shape) if self._use_current_group else None
        self._own_group = group is None
        self._group = group or placement.reserve(self._shape, self.settings.placement_group_timeout_s)

    def _make_worker(self, ray, index):
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
        strategy = PlacementGroupSchedulingStrategy(placement_group=self._group,
                                                    placement_group_bundle_index=index // self._shape.workers_per_bundle)
        actor = ray.remote(num_cpus=self._shape.cpus_per_worker, num_gpus=self._shape.gpus_per_worker)(ChorusWorker)
        return actor.options(scheduling_strategy=strategy).remote()

    def run(self, fn, args=None, kwargs=None, callbacks=None):
        """fn(*args, **kwargs) on every worker; their results in rank order.
        A rank that raises or is lost: WorkerFailure (a ChorusError) naming
        it, and the job's workers are stopped (start() makes new ones)."""
        _refuse_callbacks(callbacks)
        return self._gather(self.run_remote(fn, args, kwargs))

    def run_remote(self, fn, args=None, kwargs=None):
        """As run(), returning each rank's ray.ObjectRef at once."""
        return [w.run.remote(fn, tuple(args or ()), dict(kwargs or {})) for w in self._started()]

    def execute(self, fn, callbacks=None):
        """fn(executable) on every worker (the object start() made, or None);
        the results in rank order."""
        _refuse_callbacks(callbacks)
        return self._gather([w.execute.remote(fn) for w in self._started()])

    def execute_single(self, fn):
        """fn(executable) on rank 0's worker alone (no collective: the others
        would not join it)."""
        return self._gather([self._started()[0].execute.remote(fn)])[0]

    def _gather(self, refs):
        try:
            return outcomes.gather(refs)
        except outcomes.WorkerFailure:
            self._stop(graceful=False)  # the others may wait in a collective for the failed rank
            raise

    def _started(self):
        if self._workers is None:
            raise ChorusError("chorus.ray.RayExecutor: no workers (call start(); a failed run stops them)")
        return self._workers

    def shutdown(self):
        """Stops Chorus on the workers (all at once, as Chorus's shutdown
        wants), ends them and frees the placement group."""
        self._stop(graceful=True)

    def _stop(self, graceful):
        import ray
        from ray.util.placement_group import remove_placement_group
        workers, self._workers = self._workers, None
        if graceful and workers:
            ray.wait([w.shutdown_chorus.remote() for w in workers], num_returns=len(workers),
                     timeout=SHUTDOWN_WAIT_SECONDS)
        for w in workers or ():
            ray.kill(w)
        if self._group is not None and self._own_group:
            remove_placement_group(self._group)
        self._group = None
