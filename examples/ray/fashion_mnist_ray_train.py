"""Fashion-MNIST trained data-parallel with chorus.torch under Ray Train:
chorus.ray.ChorusTrainer (a DataParallelTrainer whose backend starts
Chorus on every worker), Ray Train's ScalingConfig, a report per epoch
and a checkpoint at the end. The C++ main job's CNN, Debian's dataset-fashion-mnist.
Run: python3 fashion_mnist_ray_train.py (a local Ray; RAY_ADDRESS=auto for
a running cluster). Prints rank 0's test accuracy; exits 1 below
EXAMPLE_MIN_ACCURACY (85). EXAMPLE_EPOCHS (2), EXAMPLE_WORKERS (2)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_EXAMPLES = os.path.abspath(os.path.join(HERE, "..", "python"))


def train_loop(config):
    """Ray Train's train_loop_per_worker: each rank reports every epoch
    (Ray Train's reports are a step of every worker); at the end rank 0
    reports its test accuracy with a checkpoint of the model."""
    import ray.train
    import torch

    import chorus.torch as hvd
    import fashion_mnist_rank  # examples/python

    trained = {}

    def keep(epoch, model):
        trained["model"] = model
        ray.train.report({"epoch": epoch})

    accuracy = fashion_mnist_rank.train(config["epochs"], after_epoch=keep)
    if hvd.rank() != 0:
        return ray.train.report({"epoch": config["epochs"]})
    with tempfile.TemporaryDirectory() as where:
        torch.save(trained["model"].state_dict(), os.path.join(where, "model.pt"))
        ray.train.report({"epoch": config["epochs"], "accuracy": accuracy},
                         checkpoint=ray.train.Checkpoint.from_directory(where))


def main():
    workers = int(os.environ.get("EXAMPLE_WORKERS", "2"))
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
    min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
    os.environ["PYTHONPATH"] = os.pathsep.join([PYTHON_EXAMPLES] + sys.path)
    import ray
    import ray.train

    from chorus.ray import ChorusTrainer
    ray.init(address=os.environ.get("RAY_ADDRESS"), num_cpus=None if os.environ.get("RAY_ADDRESS") else workers + 1,
             include_dashboard=False)
    with tempfile.TemporaryDirectory() as storage:
        trainer = ChorusTrainer(train_loop, train_loop_config={"epochs": epochs},
                                scaling_config=ray.train.ScalingConfig(num_workers=workers),
                                run_config=ray.train.RunConfig(storage_path=storage, name="fashion-mnist"))
        result = trainer.fit()
        accuracy = result.metrics["accuracy"]
        saved = result.checkpoint is not None
    ray.shutdown()
    print(f"test accuracy {accuracy:.2f} % after {epochs} epochs on {workers} Ray Train workers "
          f"(checkpoint {'saved' if saved else 'missing'})", flush=True)
    if accuracy < min_accuracy or not saved:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
