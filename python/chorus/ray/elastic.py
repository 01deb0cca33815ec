"""chorus.ray.ElasticRayExecutor: an elastic Chorus job on Ray actors
(horovod.ray's ElasticRayExecutor API, docs/clusters.md). The driver holds
the job's elastic rendezvous (chorus.rendezvous) as chorusrun does for
`--min-np` jobs, and starts one actor per free slot of the Ray cluster, up
to max_np. An actor lost (its process or node ended) is gone: the survivors
reset from their last commit through chorus.elastic.run. Capacity that
appears later (checked every discovery_interval) gets new workers, which
join at the survivors' next commit."""
import secrets
import time
from dataclasses import dataclass, field
from typing import Optional

from ..errors import AbortedError, ChorusError
from ..rendezvous import ElasticRendezvous
from . import outcomes, placement
from .executor import _refuse_callbacks
from .worker import ChorusWorker


@dataclass
class ElasticRaySettings:
    """ElasticRayExecutor.create_settings(): min_np / max_np workers,
    reset_limit (more worlds formed after the first than this: the job
    fails; None: no limit), elastic_timeout (fewer than min_np workers this
    long: the job fails), timeout_s (a new worker's actor must start within
    it), discovery_interval (how often free capacity is looked for)."""
    min_np: int = 1
    max_np: Optional[int] = None
    reset_limit: Optional[int] = None
    elastic_timeout: float = 600
    timeout_s: float = 30
    discovery_interval: float = 1.0
    join_grace: float = 10
    env: dict = field(default_factory=dict)


@dataclass
class _Member:
    actor: object
    ready: object  # the ref of actor.node(): resolved once the actor runs
    node_id: str = ""
    call: object = None  # the ref of its run_as_member, once started
    finished: bool = False  # returned; its actor stays until the job ends (the others may still finish)
    since: float = field(default_factory=time.monotonic)


class ElasticRayExecutor:
    """    executor = ElasticRayExecutor(ElasticRayExecutor.create_settings(min_np=2, max_np=4))
        executor.start()
        results = executor.run(train)   # train uses chorus.elastic.run; results in the last world's rank order
    """

    @staticmethod
    def create_settings(min_np=1, max_np=None, reset_limit=None, elastic_timeout=600, timeout_s=30,
                        ssh_identity_file=None, nics=None, min_num_proc=None, max_num_proc=None,
                        discovery_interval=1.0, join_grace=10, env=None):
        """horovod.ray's settings (min_num_proc / max_num_proc: its older
        names); ssh and nics are taken and not needed."""
        del ssh_identity_file, nics
        min_np = min_num_proc if min_num_proc is not None else min_np
        max_np = max_num_proc if max_num_proc is not None else max_np
        if int(min_np) < 1 or (max_np is not None and int(max_np) < int(min_np)):
            raise ValueError(f"chorus.ray.ElasticRayExecutor: min_np ({min_np}) must be >= 1 and at most max_np "
                             f"({max_np})")
        return ElasticRaySettings(int(min_np), None if max_np is None else int(max_np), reset_limit,
                                  float(elastic_timeout), float(timeout_s), float(discovery_interval),
                                  float(join_grace), dict(env or {}))

    def __init__(self, settings=None, use_gpu=False, cpus_per_slot=1, gpus_per_slot=None, env_vars=None,
                 override_discovery=True):
        del override_discovery  # horovod.ray's; capacity always comes from Ray's cluster resources
        self.settings = settings or ElasticRaySettings()
        if cpus_per_slot <= 0:
            raise ValueError(f"chorus.ray.ElasticRayExecutor: cpus_per_slot must be > 0, not {cpus_per_slot}")
        self._cpus = float(cpus_per_slot)
        self._gpus = float((1 if gpus_per_slot is None else gpus_per_slot) if use_gpu else 0)
        self._env = dict(env_vars or {})
        self._started = False

    def start(self):
        """Checks that Ray runs (ray.init() first); the workers start in run()."""
        import ray
        if not ray.is_initialized():
            raise ChorusError("chorus.ray.ElasticRayExecutor: Ray is not initialized (call ray.init() first)")
        self._started = True

    def run(self, worker_fn, callbacks=None, *, args=None, kwargs=None):
        """worker_fn(*args, **kwargs) on every worker of an elastic job
        (horovod.ray's run(worker_fn, callbacks)); returns the results of
        the last world's workers in its rank order. A worker that raises
        fails the job (WorkerFailure naming it); a lost one does not, nor
        one whose collective another's loss aborted."""
        _refuse_callbacks(callbacks)
        if not self._started:
            raise ChorusError("chorus.ray.ElasticRayExecutor: call start() before run()")
        job = _ElasticJob(self, worker_fn, tuple(args or ()), dict(kwargs or {}))
        try:
            return job.drive()
        finally:
            job.stop()

    def shutdown(self):
        self._started = False


class _ElasticJob:
    """One run(): the rendezvous, the members, the driver's loop."""

    def __init__(self, executor, fn, args, kwargs):
        import ray
        self.ray, self.executor, self.settings = ray, executor, executor.settings
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rendezvous = ElasticRendezvous(
            ray.util.get_node_ip_address(), f"ray-{secrets.token_hex(4)}", secrets.token_hex(16),
            self.settings.min_np, self.settings.max_np, self.settings.elastic_timeout, self.settings.join_grace,
            min_np_name="min_np", timeout_name="elastic_timeout")
        self.members, self.results, self.lost = {}, {}, []
        self.next_id, self.last_discovery = 0, -1e9
        self.below_min_since = time.monotonic()

    def drive(self):
        while True:
            now = time.monotonic()
            if not self.results and now - self.last_discovery >= self.settings.discovery_interval:
                self.last_discovery = now
                self.grow()
            if not self.results:
                self.start_ready_members()
            try:
                late = self.rendezvous.run_for(0.05)
            except AbortedError as e:
                raise ChorusError(f"chorus.ray.ElasticRayExecutor: {e}; {placement.cluster_words()}"
                                  f"{self.lost_words()}") from e
            for member in late:
                self.end(member, "late to join the next world")
            self.check_reset_limit()
            self.collect_finished()
            self.check_enough_started()
            if self.final_world_returned():
                return [result for _, _, result in sorted(self.results.values(), key=lambda r: r[0])]

    def final_world_returned(self):
        """Every worker of the world that finished has returned: the others
        (newcomers that asked too late, actors still starting) are ended."""
        if not self.results:
            return False
        size = max(s for _, s, _ in self.results.values())
        if sum(1 for _, s, _ in self.results.values() if s == size) < size:
            return all(m.finished for m in self.members.values())
        for member, m in list(self.members.items()):
            if not m.finished:
                self.end(member, None)
        return True

    def free_slots(self):
        free = self.ray.available_resources()
        slots = int(free.get("CPU", 0) // self.executor._cpus)
        if self.executor._gpus:
            slots = min(slots, int(free.get("GPU", 0) // self.executor._gpus))
        pending = sum(1 for m in self.members.values() if m.call is None)
        return max(0, slots - pending)

    def grow(self):
        """New workers on the free slots. A newcomer asks the rendezvous for
        a world; the rendezvous then tells the running world, which meets it
        at its next commit()."""
        room = (self.settings.max_np or 1 << 30) - len(self.members)
        for _ in range(max(0, min(room, self.free_slots()))):
            self.next_id += 1
            member = f"ray-worker-{self.next_id}"
            actor = self.ray.remote(num_cpus=self.executor._cpus, num_gpus=self.executor._gpus)(ChorusWorker).remote()
            self.members[member] = _Member(actor, actor.node.remote())
            self.rendezvous.expect(member)  # the first world waits for every worker started

    def start_ready_members(self):
        for member, m in list(self.members.items()):
            if m.call is not None:
                continue
            if not self.ray.wait([m.ready], timeout=0)[0]:
                if time.monotonic() - m.since > self.settings.timeout_s:
                    self.end(member, f"its actor did not start within timeout_s={self.settings.timeout_s:g}")
                continue
            try:
                m.node_id = self.ray.get(m.ready)[0]  # (node id, address, GPU ids)
                env = {**self.settings.env, **self.executor._env, **self.rendezvous.worker_env(member),
                       "CHORUS_HOST_ID": m.node_id}
                self.ray.get(m.actor.set_env.remote(env))
            except Exception as e:  # noqa: BLE001 (its actor ended, or chorus does not import there)
                self.end(member, f"its Ray actor could not start: {outcomes.describe_error(e)}")
                continue
            m.call = m.actor.run_as_member.remote(self.fn, self.args, self.kwargs)

    def collect_finished(self):
        calls = {m.call: member for member, m in self.members.items() if m.call is not None and not m.finished}
        if not calls:
            return
        done, _ = self.ray.wait(list(calls), num_returns=len(calls), timeout=0)
        for ref in done:
            member = calls[ref]
            try:
                self.results[member] = self.ray.get(ref)
                self.members[member].finished = True
            except self.ray.exceptions.RayActorError as e:
                self.end(member, f"its Ray actor ended ({str(e).splitlines()[0]})")
            except Exception as e:  # noqa: BLE001 (the worker's own error fails the job, naming it)
                if outcomes.aborted_by_another(e):  # outside elastic.run's recovery (its first init, a reset)
                    self.end(member, f"its collective was aborted by another's loss: {outcomes.describe_error(e)}")
                    continue
                raise outcomes.WorkerFailure(f"chorus.ray.ElasticRayExecutor: {member} failed: "
                                             f"{outcomes.describe_error(e)}", member=member) from e

    def check_enough_started(self):
        """Fewer than min_np workers running for elastic_timeout (the cluster
        has no room for them): the rendezvous cannot see that when none of
        them runs at all."""
        running = sum(1 for m in self.members.values() if m.call is not None)
        if running >= self.settings.min_np or self.results:
            self.below_min_since = time.monotonic()
        elif time.monotonic() - self.below_min_since > self.settings.elastic_timeout:
            raise ChorusError(f"chorus.ray.ElasticRayExecutor: only {running} of the at least "
                              f"{self.settings.min_np} workers (min_np) could start for "
                              f"{self.settings.elastic_timeout:g} s (elastic_timeout); {placement.cluster_words()}"
                              f"{self.lost_words()}")

    def check_reset_limit(self):
        limit = self.settings.reset_limit
        if limit is not None and self.rendezvous.worlds_formed - 1 > limit:
            resets = self.rendezvous.worlds_formed - 1
            raise ChorusError(f"chorus.ray.ElasticRayExecutor: {resets} reset{'s' if resets != 1 else ''}, more "
                              f"than reset_limit={limit}{self.lost_words()}")

    def end(self, member, why):
        m = self.members.pop(member, None)  # None: a member the rendezvous knows but this driver did not start
        if why is not None:
            self.lost.append(f"{member}: {why}")
        if m is not None:
            self.ray.kill(m.actor)
        self.rendezvous.gone(member)

    def lost_words(self):
        return f" (workers lost: {'; '.join(self.lost[-5:])})" if self.lost else ""

    def stop(self):
        for m in self.members.values():
            self.ray.kill(m.actor)
        self.members.clear()
        self.rendezvous.close()
