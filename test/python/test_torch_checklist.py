"""The rest of Horovod's test_torch.py checklist (docs/python.md has the
table): reducescatter's scales, errors and sets, every collective's
mismatch and duplicate-name errors, alltoall's argument errors, grouped
calls in process sets, barriers that block, fused async calls that are
still pending when polled, and the optimizer without named_parameters."""
import os
import time

import pytest

torch = pytest.importorskip("torch")
import chorus.torch as hvd  # noqa: E402


def multi():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks")


def test_rank_and_size_match_the_launcher():
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("RANK", "WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ:
            assert (hvd.rank(), hvd.size()) == (int(os.environ[rank_var]), int(os.environ[size_var]))
            return
    assert (hvd.rank(), hvd.size()) == (0, 1)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32, torch.float64])
def test_reducescatter_prescale_postscale(dtype):
    n, r = hvd.size(), hvd.rank()
    x = torch.full((2 * n, 3), 2, dtype=dtype)
    got = hvd.reducescatter(x, op=hvd.Sum, prescale_factor=1.5, postscale_factor=0.5)
    assert got.dtype == dtype and got.shape == (2, 3)
    want = n * 2 * 1.5 * 0.5
    if not dtype.is_floating_point:
        want = int(n * int(2 * 1.5) * 0.5)  # integers are scaled in float64 and cast back, as Horovod's
    assert torch.allclose(got.double(), torch.full((2, 3), float(want), dtype=torch.float64), atol=1e-2)


def test_reducescatter_refusals_on_every_rank():
    with pytest.raises(ValueError, match="scalar|dimension"):
        hvd.reducescatter(torch.tensor(1.0), name="rs.scalar")
    with pytest.raises(ValueError, match="[Aa]dasum"):
        hvd.reducescatter(torch.ones(hvd.size(), 2), op=hvd.Adasum, name="rs.adasum")
    if hvd.size() > 1:
        r = hvd.rank()
        with pytest.raises(RuntimeError):
            hvd.reducescatter(torch.ones(4, 2 + r), name="rs.shape")
        with pytest.raises(RuntimeError):
            hvd.reducescatter(torch.ones(4, 2, dtype=torch.float32 if r == 0 else torch.float64), name="rs.dtype")


def test_reducescatter_async_fused_and_average_grad():
    n, r = hvd.size(), hvd.rank()
    handles = [hvd.reducescatter_async(torch.full((n, 4), float(i + r)), name=f"rs.fused.{i}", op=hvd.Sum)
               for i in range(30)]
    for i, h in enumerate(handles):
        assert torch.all(hvd.synchronize(h) == n * i + n * (n - 1) / 2)
    x = torch.ones(2 * n, 3, requires_grad=True)
    hvd.reducescatter(x).sum().backward()   # Average: the gradient is ones
    assert torch.all(x.grad == 1)


def test_reducescatter_and_grouped_in_process_sets(even_odd_sets):
    even, odd = even_odd_sets
    r = hvd.rank()
    mine = even if r % 2 == 0 else odd
    k = mine.size()
    x = torch.full((2 * k, 2), 1.0, requires_grad=True)
    y = hvd.reducescatter(x, op=hvd.Sum, process_set=mine)
    assert y.shape == (2, 2) and torch.all(y == k)
    y.sum().backward()
    assert torch.all(x.grad == k)
    outs = hvd.grouped_allreduce([torch.ones(3), torch.ones(2, dtype=torch.float64)], op=hvd.Sum, process_set=mine)
    assert all(torch.all(o == k) for o in outs)
    gathered = hvd.grouped_allgather([torch.full((1,), r)], process_set=mine)
    assert gathered[0].tolist() == mine.ranks
    red = hvd.grouped_reducescatter([torch.ones(k, 2)], op=hvd.Sum, process_set=mine)
    assert torch.all(red[0] == k)
    out, received = hvd.alltoall(torch.full((k,), float(r)), splits=[1] * k, process_set=mine)
    assert out.tolist() == [float(m) for m in mine.ranks] and received.tolist() == [1] * k
    assert hvd.broadcast_object(("from", mine.ranks[0]), root_rank=mine.ranks[0], process_set=mine) == \
        ("from", mine.ranks[0])
    z = torch.ones(2, requires_grad=True)
    hvd.broadcast(z, mine.ranks[0], process_set=mine).sum().backward()
    assert torch.all(z.grad == (1.0 if r == mine.ranks[0] else 0.0))


def test_grouped_averages_and_their_grads():
    n = hvd.size()
    xs = [torch.full((3,), 2.0, requires_grad=True), torch.full((2, 2), 4.0, dtype=torch.float64, requires_grad=True)]
    outs = hvd.grouped_allreduce(xs, average=True)
    assert torch.all(outs[0] == 2) and torch.all(outs[1] == 4)
    sum(o.sum() for o in outs).backward()
    assert all(torch.all(x.grad == 1) for x in xs)
    ints = hvd.grouped_allreduce([torch.full((2,), 6, dtype=torch.int32)], average=True)
    assert torch.all(ints[0] == 6)
    avg = hvd.grouped_reducescatter([torch.full((n, 2), 3.0, dtype=torch.float16)])
    assert avg[0].dtype == torch.float16 and torch.all(avg[0] == 3)
    ys = [torch.ones(n, 2, requires_grad=True)]
    sum(o.sum() for o in hvd.grouped_reducescatter(ys, op=hvd.Sum)).backward()
    assert torch.all(ys[0].grad == n)


@pytest.mark.parametrize("name", [None, "mixed"])
def test_grouped_calls_with_and_without_autograd_fail_together(name):
    """One rank's tensors require grad (the autograd path sends the members
    one by one), the others' do not (one group): the members' names agree
    on both paths, so every rank fails at once naming the difference
    instead of waiting for names that never come."""
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks or more")
    n, r = hvd.size(), hvd.rank()
    grad = r == 0
    xs = [torch.full((1, 2), float(r), requires_grad=grad), torch.full((2,), float(r), requires_grad=grad)]
    with pytest.raises(hvd.InvalidArgumentError, match="group differs"):
        hvd.grouped_allgather(xs, name=name)
    ys = [torch.full((n, 2), 1.0, requires_grad=grad), torch.full((n,), 1.0, requires_grad=grad)]
    with pytest.raises(hvd.InvalidArgumentError, match="group differs"):
        hvd.grouped_reducescatter(ys, op=hvd.Sum, name=None if name is None else name + ".rs")


def test_grouped_allgather_grad_keeps_own_rows():
    n, r = hvd.size(), hvd.rank()
    xs = [torch.ones(r + 1, 2, requires_grad=True), torch.ones(1, dtype=torch.float64, requires_grad=True)]
    outs = hvd.grouped_allgather(xs)
    (outs[0].sum() + outs[1].sum()).backward()
    assert torch.all(xs[0].grad == 1) and torch.all(xs[1].grad == 1)
    assert outs[0].shape[0] == n * (n + 1) // 2


@pytest.mark.parametrize("kind", ["allgather", "reducescatter", "broadcast"])
def test_async_fused_calls_are_pending_when_polled(kind):
    n, r = hvd.size(), hvd.rank()
    if r == 0 and n > 1:
        time.sleep(0.05)  # rank 0 comes late: the others' handles are pending when they poll
    submit = {"allgather": lambda i: hvd.allgather_async(torch.full((1, 2), float(i)), name=f"poll.ag.{i}"),
              "reducescatter": lambda i: hvd.reducescatter_async(torch.full((n, 2), float(i)), name=f"poll.rs.{i}"),
              "broadcast": lambda i: hvd.broadcast_async(torch.full((2,), float(i + r)), 0, name=f"poll.bc.{i}")}[kind]
    handles = [submit(i) for i in range(20)]
    polled = [hvd.poll(h) for h in handles]
    if n > 1 and r != 0:
        assert not all(polled)
    for i, h in enumerate(handles):
        out = hvd.synchronize(h)
        assert torch.all(out == i)


@pytest.mark.parametrize("kind", ["allgather", "broadcast", "alltoall", "reducescatter"])
def test_mismatched_dtype_and_shape_raise_on_every_rank(kind):
    multi()
    n, r = hvd.size(), hvd.rank()
    dtype = torch.float32 if r == 0 else torch.int32
    call = {"allgather": lambda t, k: hvd.allgather(t, name=k),
            "broadcast": lambda t, k: hvd.broadcast(t, 0, name=k),
            "alltoall": lambda t, k: hvd.alltoall(t, name=k),
            "reducescatter": lambda t, k: hvd.reducescatter(t, name=k)}[kind]
    with pytest.raises(RuntimeError, match="dtype|type"):
        call(torch.ones(n, 2, dtype=dtype), f"{kind}.dtype")
    with pytest.raises(RuntimeError):
        call(torch.ones(n, 2 + r), f"{kind}.shape")


@pytest.mark.parametrize("kind", ["allgather", "broadcast", "reducescatter", "alltoall"])
def test_duplicate_in_flight_name_is_a_value_error(kind):
    multi()
    n = hvd.size()
    call = {"allgather": lambda: hvd.allgather_async(torch.ones(1), name=f"dup.{kind}"),
            "broadcast": lambda: hvd.broadcast_async(torch.ones(1), 0, name=f"dup.{kind}"),
            "reducescatter": lambda: hvd.reducescatter_async(torch.ones(n), name=f"dup.{kind}"),
            "alltoall": lambda: hvd.alltoall_async(torch.ones(n), name=f"dup.{kind}")}[kind]
    last = hvd.rank() == n - 1
    if not last:
        h = call()
        with pytest.raises(ValueError):
            call()
    hvd.barrier()
    if last:
        h = call()
    hvd.synchronize(h)


def test_alltoall_argument_errors_raise_on_every_rank():
    n = hvd.size()
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(n, 2), splits=torch.tensor([n + 1] + [0] * (n - 1), dtype=torch.int32), name="a2a.sum")
    with pytest.raises(ValueError, match="integer"):
        hvd.alltoall(torch.ones(n), splits=torch.ones(n, dtype=torch.float32), name="a2a.float")
    with pytest.raises(ValueError, match="integer"):
        hvd.alltoall(torch.ones(n), splits=[1.5] * n, name="a2a.floatlist")
    if n > 1:
        with pytest.raises(ValueError):
            hvd.alltoall(torch.ones(n + 1), name="a2a.uneven")
        with pytest.raises(ValueError):
            hvd.alltoall(torch.ones(n), splits=[1] * (n + 1), name="a2a.count")


def test_alltoall_equal_split_grad():
    n = hvd.size()
    x = torch.ones(2 * n, 3, requires_grad=True)
    hvd.alltoall(x).sum().backward()
    assert torch.all(x.grad == 1)


def test_collectives_after_join_raise():
    multi()
    if hvd.rank() == 0:
        hvd.join(hvd.local_rank())  # Horovod's device argument is accepted on the CPU
    else:
        with pytest.raises(RuntimeError):
            hvd.broadcast(torch.ones(2), 1, name="bcast.after.join")
        hvd.join()


def test_barriers_block(even_odd_sets):
    even, odd = even_odd_sets
    r = hvd.rank()
    t0 = time.monotonic()
    if r == 0:
        time.sleep(0.5)
    hvd.barrier()
    assert time.monotonic() - t0 >= (0.45 if r != 0 else 0.5)
    t0 = time.monotonic()
    if r == 0:
        time.sleep(0.5)
    mine = even if r % 2 == 0 else odd
    hvd.barrier(process_set=mine)
    waited = time.monotonic() - t0
    if mine is even:
        assert waited >= 0.45
    hvd.barrier()


def test_broadcast_parameters_with_a_parameter_that_does_not_require_grad():
    r = hvd.rank()
    w = torch.nn.Parameter(torch.full((3,), r, dtype=torch.int64), requires_grad=False)
    hvd.broadcast_parameters([("w", w)], root_rank=0)
    assert torch.all(w == 0) and w.grad is None


def test_compression_fp16_casts_floats_only():
    for dtype in (torch.float32, torch.float64):
        t = torch.ones(3, dtype=dtype)
        c, ctx = hvd.Compression.fp16.compress(t)
        assert c.dtype == torch.float16 and hvd.Compression.fp16.decompress(c, ctx).dtype == dtype
    i = torch.ones(3, dtype=torch.int32)
    c, ctx = hvd.Compression.fp16.compress(i)
    assert c.dtype == torch.int32 and hvd.Compression.fp16.decompress(c, ctx).dtype == torch.int32


def test_optimizer_without_named_parameters_and_partial_names():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    opt = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.2}], lr=0.1)
    dist = hvd.DistributedOptimizer(opt)
    names = sorted(dist._parameter_names.values())
    assert names == sorted(set(names)) and len(names) == 4
    assert hvd.allgather_object(names) == [names] * hvd.size()
    model(torch.ones(1, 3)).sum().backward()
    dist.step()
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=list(model[0].named_parameters()))


def test_two_optimizers_toggling_requires_grad():
    # A GAN's two optimizers: each step freezes the other model's parameters.
    g, d = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    hvd.broadcast_parameters(g.state_dict(), root_rank=0)
    hvd.broadcast_parameters(d.state_dict(), root_rank=0)
    opt_g = hvd.DistributedOptimizer(torch.optim.SGD(g.parameters(), lr=0.1), named_parameters=g.named_parameters(),
                                     process_set=hvd.global_process_set)
    opt_d = hvd.DistributedOptimizer(torch.optim.SGD(d.parameters(), lr=0.1),
                                     named_parameters=[("d." + k, v) for k, v in d.named_parameters()])
    x = torch.ones(4, 2) * (hvd.rank() + 1)
    for _ in range(2):
        for p in d.parameters():
            p.requires_grad_(False)
        opt_g.zero_grad()
        d(g(x)).sum().backward()
        opt_g.step()
        for p in d.parameters():
            p.requires_grad_(True)
        opt_d.zero_grad()
        d(g(x).detach()).sum().backward()
        opt_d.step()
    states = hvd.allgather_object([p.detach().clone() for p in list(g.parameters()) + list(d.parameters())])
    for other in states:
        for a, b in zip(other, states[0]):
            assert torch.allclose(a, b)


def test_sparse_average_in_a_process_set(even_odd_sets):
    even, odd = even_odd_sets
    r = hvd.rank()
    mine = even if r % 2 == 0 else odd
    dense = torch.zeros(4, 2)
    dense[r % 4] = 1.0
    got = hvd.sparse_allreduce_async(dense.to_sparse(), name="sparse.set", op=hvd.Average, process_set=mine)()
    want = hvd.allreduce(dense, op=hvd.Average, process_set=mine, name="dense.set")
    assert torch.allclose(got.to_dense(), want)


def test_gradients_inside_process_sets(even_odd_sets):
    even, odd = even_odd_sets
    r = hvd.rank()
    mine = even if r % 2 == 0 else odd
    k, me = mine.size(), mine.rank()
    xs = [torch.ones(2, requires_grad=True), torch.ones(3, dtype=torch.float64, requires_grad=True)]
    sum(o.sum() for o in hvd.grouped_allreduce(xs, op=hvd.Sum, process_set=mine)).backward()
    assert all(torch.all(x.grad == k) for x in xs)
    g = torch.ones(me + 1, 2, requires_grad=True)
    out = hvd.allgather(g, process_set=mine)
    weights = torch.cat([torch.full((j + 1, 2), float(j + 1)) for j in range(k)])
    out.backward(weights)  # the same upstream gradient everywhere: the average is itself
    assert torch.all(g.grad == me + 1)
    a = torch.ones(k, 3, requires_grad=True)
    hvd.alltoall(a, process_set=mine).sum().backward()
    assert torch.all(a.grad == 1)


def test_reducescatter_gives_each_rank_its_own_rows():
    n, r = hvd.size(), hvd.rank()
    rows = torch.arange(2 * n, dtype=torch.float64).unsqueeze(1).repeat(1, 2)  # row i holds i
    got = hvd.reducescatter(rows + r, op=hvd.Sum)
    assert torch.equal(got[:, 0], (torch.arange(2 * r, 2 * r + 2, dtype=torch.float64) * n + n * (n - 1) / 2))


def test_grouped_reducescatter_scales_and_scalar_refusal():
    n = hvd.size()
    out = hvd.grouped_reducescatter([torch.full((n, 2), 2.0), torch.full((2 * n,), 4.0, dtype=torch.float64)],
                                    op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    assert torch.all(out[0] == n * 2.0 * 0.5 * 3.0) and torch.all(out[1] == n * 4.0 * 0.5 * 3.0)
    with pytest.raises(ValueError, match="dimension"):
        hvd.grouped_reducescatter([torch.ones(n), torch.tensor(1.0)], name="grs.scalar")


def test_broadcast_object_reaches_only_the_set(even_odd_sets):
    even, odd = even_odd_sets
    r = hvd.rank()
    mine = even if r % 2 == 0 else odd
    got = hvd.broadcast_object({"sent by": r}, root_rank=mine.ranks[0], process_set=mine)
    assert got == {"sent by": mine.ranks[0]}


def test_duplicate_parameter_names_refused_before_init():
    import subprocess
    import sys
    code = ("import torch, chorus.torch as hvd\n"
            "m = torch.nn.Linear(2, 2)\n"
            "try:\n"
            "    hvd.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=1),\n"
            "                             named_parameters=[('same', p) for p in m.parameters()])\n"
            "except ValueError as e:\n"
            "    assert 'unique' in str(e), e\n"
            "    print('ok')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.dirname(hvd.__file__)))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_one_ranks_bad_sparse_or_split_input_fails_every_rank():
    bad = hvd.rank() == hvd.size() - 1
    dense = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="sparse COO tensor"):
        hvd.sparse_allreduce_async(dense if bad else dense.to_sparse(), name="sparse.bad", op=hvd.Sum)()
    n = hvd.size()
    x = torch.ones(n, 2, requires_grad=True)
    with pytest.raises(ValueError, match="integer"):
        hvd.alltoall(x, splits=[0.5] * n if bad else [1] * n, name="a2a.grad.bad")
