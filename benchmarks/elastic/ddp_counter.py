# The reference for elastic recovery (elastic_recovery.sh): the same job as
# test/elastic/elastic_counter.cc under torchrun with PyTorch DDP's process
# group (gloo): a 1024-double "model", one allreduce and a pause per step,
# "STEP n rank=r size=s t=..." after each. torchrun --max_restarts restarts
# every worker after a kill; the first STEP after it is the recovery.
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    model = torch.zeros(1024, dtype=torch.float64)
    for step in range(steps):
        g = torch.full((1024,), float(step % 7 + 1), dtype=torch.float64)
        dist.all_reduce(g)
        model += g / size
        print(f"STEP {step + 1} rank={rank} size={size} t={time.time():.3f}", flush=True)
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
