#!/usr/bin/env python3
"""ResNet-18 training throughput through horovod.torch's API: the same
workload as synthetic_benchmark (C++) and ddp_benchmark.py (DDP), written
once for `import chorus.torch as hvd` and `import horovod.torch as hvd`
(--framework), so the two run the very same lines.

    chorusrun -np 2 python3 hvd_synthetic_benchmark.py --framework chorus
    mpirun -np 2 python3 hvd_synthetic_benchmark.py --framework horovod

Ends with `RESULT np=N imgs_per_sec_total=... per_rank=... std=...`, as the
other two print it."""
import argparse
import importlib
import os
import sys
import timeit

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "synthetic_benchmark"))
from ddp_benchmark import ResNet18  # noqa: E402  (the model the C++ and DDP benchmarks build)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--framework", choices=["chorus", "horovod"], default="chorus")
    p.add_argument("--batch-size", type=int, default=32, help="images per rank and backward pass")
    p.add_argument("--num-warmup-batches", type=int, default=10)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10)
    p.add_argument("--fp16-allreduce", action="store_true")
    p.add_argument("--lr", type=float, default=0.01, help="per rank; SGD gets lr x size")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


def main():
    args = parse_args()
    hvd = importlib.import_module("chorus.torch" if args.framework == "chorus" else "horovod.torch")
    torch.set_num_threads(args.threads)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    torch.manual_seed(args.seed)
    model = ResNet18(10)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * size)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.randn(args.batch_size, 3, 32, 32)
    target = torch.randint(0, 10, (args.batch_size,))

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"Model: resnet18 ({params} parameters), input 3x32x32, random data ({args.framework}.torch, "
              f"torch {torch.__version__})")
        print(f"Batch size: {args.batch_size} per rank, fp16 allreduce {'on' if args.fp16_allreduce else 'off'}, "
              f"{args.threads} threads per rank\nNumber of ranks: {size}\nRunning warmup...", flush=True)
    model.train()
    timeit.timeit(step, number=args.num_warmup_batches)
    images = args.batch_size * args.num_batches_per_iter
    rates = []
    for i in range(args.num_iters):
        rates.append(images / timeit.timeit(step, number=args.num_batches_per_iter))
        if rank == 0:
            print(f"Iter #{i}: {rates[-1]:.1f} img/sec on rank 0", flush=True)
    totals = hvd.allreduce(torch.tensor(rates, dtype=torch.float64), op=hvd.Sum, name="benchmark.rates")
    per_rank = totals / size
    if rank == 0:
        r_mean, r_std = per_rank.mean().item(), per_rank.std(unbiased=False).item()
        t_mean, t_std = totals.mean().item(), totals.std(unbiased=False).item()
        print(f"Img/sec per rank: {r_mean:.1f} +-{1.96 * r_std:.1f}")
        print(f"Total img/sec on {size} rank(s): {t_mean:.1f} +-{1.96 * t_std:.1f}")
        print(f"RESULT np={size} imgs_per_sec_total={t_mean:.1f} per_rank={r_mean:.1f} std={r_std:.1f}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
