"""chorus.elastic and chorus.torch.elastic without an elastic job: state
commit/restore/sync round trips, the agreement on host updates, run()'s
retry loop (with the elastic checks stubbed where a real reset would need
the elastic launcher), and ElasticSampler's partitions across world sizes.
Runs at any rank count; every rank makes the same collectives."""
import pytest

import chorus
from chorus import elastic

try:
    import torch
    import chorus.torch as hvd
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def object_state(**values):
    return elastic.ObjectState(chorus.broadcast_object, chorus.rank, **values)


# --- ObjectState and host updates ------------------------------------------------

def test_object_state_commit_restore_round_trip():
    state = object_state(epoch=0, history=[1])
    state.epoch = 3
    state.history.append(2)
    state.commit()
    state.epoch = 5
    state.history.append(9)  # changed in place: the committed copy must not see it
    state.restore()
    assert (state.epoch, state.history) == (3, [1, 2])
    state.history.append(7)
    state.restore()
    assert state.history == [1, 2]


def test_object_state_sync_gives_every_rank_rank_0s_committed_values():
    state = object_state(epoch=0)
    state.epoch = 10 + chorus.rank()
    state.save()
    state.epoch = -1  # not committed: sync sends what was saved
    state.sync()
    assert state.epoch == 10


def test_values_that_would_hide_the_state_are_refused():
    with pytest.raises(ValueError, match="commit"):
        object_state(commit=1)
    with pytest.raises(ValueError, match="_saved_state"):
        object_state(_saved_state=1)


def test_check_host_updates_raises_nothing_without_notices():
    assert not elastic.enabled()
    assert elastic.host_updates() == (0, 0)
    state = object_state(epoch=0)
    state.check_host_updates()
    state.commit()
    assert state._last_generation == 0


def test_check_host_updates_agrees_on_the_newest_notice_of_any_rank(monkeypatch):
    n, r = chorus.size(), chorus.rank()
    notice = {0: (3, elastic.HOSTS_ADDED), n - 1: (2, elastic.HOSTS_REMOVED)} if n > 1 else {0: (3, 1)}
    monkeypatch.setattr(elastic, "host_updates", lambda: notice.get(r, (0, 0)))
    state = object_state(epoch=0)
    with pytest.raises(elastic.HostsUpdatedInterrupt) as raised:
        state.commit()
    expected_kinds = elastic.HOSTS_ADDED | (elastic.HOSTS_REMOVED if n > 1 else 0)
    assert (raised.value.generation, raised.value.kinds, raised.value.skip_sync) == (3, expected_kinds, False)
    state.check_host_updates()  # the same notice again: already agreed on
    state.on_reset()
    assert state._last_generation == 0  # a new world counts notices from its formation


# --- run() ---------------------------------------------------------------------------

class CountingState(elastic.ObjectState):
    def __init__(self, **values):
        super().__init__(chorus.broadcast_object, chorus.rank, **values)
        self.syncs = 0

    def sync(self):
        self.syncs += 1
        super().sync()


@pytest.fixture
def elastic_loop(monkeypatch):
    """run() as in an elastic job, over any transport, with a reset that only counts."""
    monkeypatch.setattr(elastic, "enabled", lambda: True)
    monkeypatch.setattr(elastic, "_check_can_run", lambda: None)
    resets = []
    return lambda fn: elastic.run_fn(fn, lambda: resets.append(1)), resets


def test_run_outside_an_elastic_job_calls_fn_once():
    calls = []

    @elastic.run
    def train(state, x, y=0):
        calls.append(1)
        return x + y + state.epoch

    state = object_state(epoch=1 + chorus.rank())
    if chorus.mpi_enabled():
        with pytest.raises(chorus.PreconditionError, match="TCP transport"):
            train(state, 1, y=2)
        assert calls == []
    else:
        assert train(state, 1, y=2) == 4  # synced first: rank 0's epoch
        assert calls == [1]


@pytest.mark.parametrize("error", [chorus.InvalidArgumentError, chorus.PreconditionError])
def test_run_reraises_other_errors_at_once(elastic_loop, error):
    run, resets = elastic_loop
    calls = []

    @run
    def train(state):
        calls.append(1)
        raise error("a bug, not a lost rank")

    with pytest.raises(error, match="a bug"):
        train(object_state(epoch=0))
    assert (calls, resets) == ([1], [])


def test_run_resets_and_syncs_again_after_hosts_updated(elastic_loop):
    run, resets = elastic_loop
    state = CountingState(epoch=0)
    on_reset = []
    state.register_reset_callbacks([lambda: on_reset.append(state.syncs)])

    @run
    def train(state):
        if not resets:
            state.epoch = 4
            state.commit()
            raise elastic.HostsUpdatedInterrupt(skip_sync=True)  # skip_sync ignored: always synced
        return state.epoch

    assert train(state) == 4
    assert (resets, on_reset, state.syncs) == ([1], [1], 2)


def test_run_restores_the_last_commit_after_a_lost_rank(elastic_loop):
    run, resets = elastic_loop
    state = CountingState(epoch=0)

    @run
    def train(state):
        if not resets:
            state.epoch = 2
            state.commit()
            state.epoch = 99  # lost with the rank
            raise chorus.AbortedError("rank 1 stopped")
        return state.epoch

    assert train(state) == 2
    assert (resets, state.syncs) == ([1], 2)


def test_run_in_a_job_that_is_not_elastic_says_so_when_a_rank_is_lost(monkeypatch):
    monkeypatch.setattr(elastic, "_check_can_run", lambda: None)

    @elastic.run
    def train(state):
        raise chorus.AbortedError("rank 1 stopped")

    with pytest.raises(chorus.AbortedError, match="not elastic"):
        train(object_state(epoch=0))


def test_run_refuses_before_init(monkeypatch):
    monkeypatch.setattr(elastic, "is_initialized", lambda: False)
    with pytest.raises(chorus.PreconditionError, match="init"):
        elastic.run(lambda state: None)(object_state(epoch=0))


# --- TorchState ----------------------------------------------------------------------

def train_step(model, optimizer):
    optimizer.zero_grad()
    model(torch.ones(3, 4)).sum().backward()
    optimizer.step()


@needs_torch
def test_hvd_elastic_is_chorus_torch_elastic():
    assert hvd.elastic.run is elastic.run
    assert hvd.elastic.HorovodInternalError is chorus.ChorusError
    assert issubclass(hvd.elastic.HostsUpdatedInterrupt, RuntimeError)


@needs_torch
def test_torch_state_commit_restore_round_trip():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    state = hvd.elastic.TorchState(model, optimizer, scheduler=scheduler, epoch=0)
    assert (state.model, state.optimizer, state.scheduler) == (model, optimizer, scheduler)
    train_step(model, optimizer)
    scheduler.step()
    state.epoch = 1
    state.commit()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    momentum = [optimizer.state[p]["momentum_buffer"].clone() for p in model.parameters()]
    train_step(model, optimizer)
    scheduler.step()
    state.epoch = 2
    state.restore()
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())
    assert all(torch.equal(m, optimizer.state[p]["momentum_buffer"]) for m, p in zip(momentum, model.parameters()))
    assert (scheduler.last_epoch, state.epoch) == (1, 1)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)
    train_step(model, optimizer)  # the distributed optimizer still steps after its state was loaded


@needs_torch
def test_torch_state_sync_gives_every_rank_rank_0s_model():
    model = torch.nn.Linear(4, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(chorus.rank())
    state = hvd.elastic.TorchState(model, torch.optim.SGD(model.parameters(), lr=0.1), batch=chorus.rank())
    state.sync()
    assert all(torch.equal(p, torch.zeros_like(p)) for p in model.parameters())
    assert state.batch == 0
    replaced = torch.nn.Linear(4, 2)
    state.model = replaced  # saved at once: a restore gives its values, not the old model's
    assigned = replaced.weight.detach().clone()
    with torch.no_grad():
        replaced.weight.add_(1)
    state.restore()
    assert state.model is replaced and torch.equal(replaced.weight, assigned)


@needs_torch
def test_torch_state_commit_keeps_every_ranks_processed_samples():
    n = chorus.size()
    sampler = hvd.elastic.ElasticSampler(list(range(10 * n)), seed=3)
    state = hvd.elastic.TorchState(sampler=sampler)
    sampler.record_batch(0, 2)
    state.commit()
    everyone = set().union(*chorus.allgather_object(set(sampler.get_indices(0, 2))))
    assert len(everyone) == 2 * n and sampler.processed_indices == everyone
    sampler.record_batch(1, 2)
    state.restore()
    assert sampler.processed_indices == everyone and not everyone & set(sampler)
    state.sync()
    assert len(sampler) == 8


# --- ElasticSampler partitions -------------------------------------------------------

def sampler_at(dataset, rank, size, state=None, shuffle=True):
    s = hvd.elastic.ElasticSampler(dataset, shuffle=shuffle, seed=7)
    s._world = lambda: (rank, size)
    s.load_state_dict(state or s.state_dict())
    return s


def check_partition(parts, remaining):
    """Every remaining index on some rank, once, but for the < size padded repeats."""
    size, each = len(parts), len(parts[0])
    assert all(len(p) == each for p in parts)
    got = [i for p in parts for i in p]
    assert set(got) == set(remaining)
    padding = size * each - len(remaining)
    assert 0 <= padding < size
    assert len(got) - len(set(got)) == padding


@needs_torch
@pytest.mark.parametrize("before", [1, 2, 3, 4])
@pytest.mark.parametrize("after", [1, 2, 3, 4])
def test_sampler_record_batch_then_reset_covers_the_rest_once(before, after):
    dataset = list(range(23))
    first = [sampler_at(dataset, r, before) for r in range(before)]
    check_partition([list(s) for s in first], dataset)
    for s in first:
        s.record_batch(0, 3)
        s.record_batch(1, 3)
    processed = set().union(*(s.processed_indices for s in first))  # as TorchState's commit gathers them
    assert len(processed) == min(6 * before, 23)
    state = dict(epoch=0, processed_indices=processed)
    after_reset = [sampler_at(dataset, r, after, state) for r in range(after)]
    remaining = [i for i in dataset if i not in processed]
    check_partition([list(s) for s in after_reset], remaining)
    assert all(len(s) == len(list(s)) for s in after_reset)


@needs_torch
def test_sampler_with_fewer_remaining_indices_than_ranks():
    state = dict(epoch=0, processed_indices=set(range(9)))
    parts = [list(sampler_at(list(range(10)), r, 4, state)) for r in range(4)]
    assert parts == [[9]] * 4


@needs_torch
def test_sampler_epochs_reshuffle_and_start_over():
    s = sampler_at(list(range(12)), 0, 1)
    epoch_0 = list(s)
    s.record_batch(0, 5)
    assert s.get_indices(2, 5) == epoch_0[10:12]
    s.reset()  # what a reset does: the rest of the epoch only
    assert len(s) == 7 and sorted(s) == sorted(epoch_0[5:])
    s.set_epoch(1)
    assert len(s) == 12 and s.processed_indices == set() and list(s) != epoch_0
    unshuffled = sampler_at(list(range(12)), 1, 3, shuffle=False)
    assert list(unshuffled) == [1, 4, 7, 10]
