"""The functions test/ray runs on the workers (importable there by name)."""
import os
import time


def allreduce_rank():
    import numpy as np
    import chorus
    chorus.init()
    total = chorus.allreduce(np.array([chorus.rank() + 1.0]), op=chorus.Sum)
    return {"rank": chorus.rank(), "size": chorus.size(), "local_rank": chorus.local_rank(),
            "local_size": chorus.local_size(), "sum": float(total[0]),
            "secret": os.environ["CHORUS_SECRET"] != ""}


def fails_on_rank_one(message):
    import chorus
    chorus.init()
    if chorus.rank() == 1:
        raise ValueError(message)
    chorus.barrier()  # the others wait for rank 1: the executor must stop them
    return chorus.rank()


def lost_on_rank_one():
    import chorus
    chorus.init()
    chorus.barrier()
    if chorus.rank() == 1:
        time.sleep(0.2)
        os._exit(3)  # the actor's process ends mid-job
    chorus.barrier()
    return chorus.rank()


class Counter:
    """An executable: start() makes one on every worker."""

    def __init__(self, start):
        import chorus
        chorus.init()
        self.value = start + chorus.rank()


def counter_value(counter):
    return counter.value


def node_id(_):
    import ray
    return ray.get_runtime_context().get_node_id()


def train_loop(config):
    """A Ray Train loop on chorus.torch: a linear model fitted to y = 3x on
    data that differs by rank; DistributedOptimizer keeps the ranks' weights
    equal; rank 0 reports a checkpoint of them."""
    import tempfile

    import ray.train
    import torch

    import chorus.torch as hvd
    hvd.init()
    torch.manual_seed(hvd.rank())  # different starting weights: broadcast_parameters makes them equal
    model = torch.nn.Linear(1, 1, bias=False)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    x = torch.full((8, 1), float(hvd.rank() + 1))
    for _ in range(config["steps"]):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), 3 * x).backward()
        optimizer.step()
    weights = hvd.allgather(model.weight.detach().reshape(1))
    metrics = {"weight": float(model.weight), "weights": weights.tolist(), "size": hvd.size()}
    if hvd.rank() == 0:
        with tempfile.TemporaryDirectory() as where:
            torch.save(model.state_dict(), os.path.join(where, "model.pt"))
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(where))
    else:
        ray.train.report(metrics)


def elastic_counter(steps, marker, step_seconds=0.05, end_own_process=True):
    """An elastic job's worker (as test/elastic's counter): a model of 64
    doubles, each step adds the allreduced average of a gradient every rank
    computes alike and commits; the size of the world changes nothing. The
    first worker to reach step steps//3 as rank 1 creates `marker` (once)
    and, with end_own_process, ends its process, so the others reset from
    their last commit. The result: (steps done, the model's checksum, the
    resets this worker saw, the last world's size)."""
    import numpy as np

    import chorus
    from chorus import elastic
    chorus.init()
    state = elastic.ObjectState(chorus.broadcast_object, chorus.rank, step=0, model=np.zeros(64))
    resets = []
    state.register_reset_callbacks([lambda: resets.append(chorus.size())])

    @elastic.run
    def train(state):
        while state.step < steps:
            gradient = np.full(64, float(state.step % 7 + 1)) * np.arange(64) % 5
            state.model = state.model + chorus.allreduce(gradient, op=chorus.Average, name="grad")
            state.step += 1
            if state.step == steps // 3 and chorus.rank() == 1 and not os.path.exists(marker):
                open(marker, "w").close()
                if end_own_process:
                    os._exit(3)
            time.sleep(step_seconds)
            state.commit()
    train(state)
    return state.step, float(state.model.sum()), resets, chorus.size()


def elastic_closed_form(steps):
    import numpy as np
    return float(sum((np.full(64, float(k % 7 + 1)) * np.arange(64) % 5).sum() for k in range(steps)))


def raises_in_elastic_job():
    import chorus
    chorus.init()
    raise KeyError("a bug in the training function")
