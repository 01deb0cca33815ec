"""PyTorch's gloo backend as a reference for scripts/bench_tcp.sh: median
time of dist.all_reduce (float32 sum) per size, the slowest rank's time per
iteration (as collective_benchmark counts). Started once per rank with
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE (and GLOO_SOCKET_IFNAME when the
host has several interfaces).
usage: gloo_allreduce.py --bytes 16777216,67108864 --iters 5"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bytes", default="16777216,67108864")
    p.add_argument("--iters", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    bus = 2.0 * (size - 1) / size
    for nbytes in (int(b) for b in a.bytes.split(",")):
        x = torch.full((nbytes // 4,), float(rank + 1))
        dist.all_reduce(x)  # warm-up
        times = []
        for _ in range(a.iters):
            x.fill_(float(rank + 1))
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            times.append(t.item())
        want = size * (size + 1) / 2
        wrong = int((x != want).sum().item())
        med = statistics.median(times)
        if rank == 0:
            print(f"gloo {nbytes} bytes: median {med * 1e6:.1f} us busbw {nbytes / med / 1e9 * bus:.3f} GB/s "
                  f"#wrong {wrong}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
