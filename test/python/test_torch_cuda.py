"""chorus.torch on CUDA tensors, through the C ABI's device entry points
(the tensor's device and current stream): skipped without a GPU; run by
scripts/gpu_check.sh on a machine with one (every rank on GPU local_rank %
device count)."""
import pytest

torch = pytest.importorskip("torch")
import chorus.torch as hvd  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or not hvd.cuda_built(),
                                reason="needs a GPU and a Chorus built with CUDA")


@pytest.fixture(autouse=True)
def device():
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    return torch.device("cuda")


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32, torch.float64])
def test_allreduce_on_the_device(device, dtype):
    n, r = hvd.size(), hvd.rank()
    x = torch.full((17, 3), r + 1, dtype=dtype, device=device)
    y = hvd.allreduce(x, op=hvd.Sum)
    assert y.is_cuda and torch.all(y.cpu().double() == n * (n + 1) / 2)
    hvd.allreduce_(x, op=hvd.Sum)
    assert torch.all(x.cpu().double() == n * (n + 1) / 2)


def test_shaped_collectives_on_the_device(device):
    n, r = hvd.size(), hvd.rank()
    g = hvd.allgather(torch.full((r + 1, 2), float(r), device=device))
    assert g.is_cuda and g.shape == (n * (n + 1) // 2, 2)
    b = hvd.broadcast(torch.full((3,), float(r), device=device), 0)
    assert torch.all(b.cpu() == 0)
    out, received = hvd.alltoall(torch.full((n,), float(r), device=device), splits=[1] * n)
    assert out.cpu().tolist() == [float(k) for k in range(n)] and received.tolist() == [1] * n
    rs = hvd.reducescatter(torch.ones(2 * n, 2, device=device), op=hvd.Sum)
    assert rs.is_cuda and torch.all(rs.cpu() == n)
    outs = hvd.grouped_allreduce([torch.ones(2, device=device), torch.ones(3, device=device)], op=hvd.Sum)
    assert all(torch.all(o.cpu() == n) for o in outs)


def test_grads_and_optimizer_on_the_device(device):
    n = hvd.size()
    x = torch.ones(4, device=device, requires_grad=True)
    hvd.allreduce(x, op=hvd.Sum).sum().backward()
    assert torch.all(x.grad.cpu() == n)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).to(device)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    model(torch.full((2, 3), float(hvd.rank()), device=device)).sum().backward()
    opt.step()
    grads = hvd.allgather_object(model.weight.grad.cpu())
    assert all(torch.allclose(gr, grads[0]) for gr in grads)
    assert torch.allclose(grads[0], torch.full((1, 3), 2.0 * (n - 1) / 2))


def test_sync_batch_norm_on_the_device(device):
    bn = hvd.SyncBatchNorm(3).to(device)
    x = torch.randn(4, 3, 5, device=device, requires_grad=True)
    bn(x).sum().backward()
    assert x.grad.is_cuda and bn.running_mean.is_cuda


def test_cpu_against_cuda_fails_on_every_rank(device):
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks")
    t = torch.ones(3) if hvd.rank() == 0 else torch.ones(3, device=device)
    with pytest.raises(RuntimeError):
        hvd.allreduce(t, name="cpu.vs.cuda")
