# What commit() costs per step for ResNet-18's state (elastic_recovery.sh):
# chorus.torch.elastic.TorchState over torchvision's resnet18 and an SGD
# optimizer with momentum (its buffers filled by one step), timed over
# --commits commits, beside one plain allreduce of the same 3 int64 values
# check_host_updates agrees on (its collective part) and the deep copy
# alone (its save part).
import copy
import sys
import time

import torch
import torchvision

import chorus.torch as hvd


def timed(fn, n):
    fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1000.0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    torch.set_num_threads(1)
    hvd.init()
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                         named_parameters=model.named_parameters())
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    optimizer.step()
    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    flag = torch.zeros(3, dtype=torch.int64)
    commit_ms = timed(state.commit, n)
    allreduce_ms = timed(lambda: hvd.allreduce(flag, op=hvd.Max, name="bench.flag"), n)
    copy_ms = timed(lambda: (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict())), n)
    params = sum(p.numel() for p in model.parameters())
    if hvd.rank() == 0:
        print(f"COMMIT resnet18 params={params} ranks={hvd.size()} commit_ms={commit_ms:.2f} "
              f"deepcopy_ms={copy_ms:.2f} agreement_allreduce_ms={allreduce_ms:.3f}", flush=True)


if __name__ == "__main__":
    main()
