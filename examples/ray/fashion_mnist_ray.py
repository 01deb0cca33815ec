"""Fashion-MNIST trained data-parallel with chorus.torch on Ray actors
through chorus.ray.RayExecutor (horovod.ray's API): the C++ main job's CNN,
one rank per actor, Debian's dataset-fashion-mnist (nothing downloaded).
Run: python3 fashion_mnist_ray.py (a local Ray of EXAMPLE_WORKERS CPUs, 2
by default; RAY_ADDRESS=auto to use a running cluster whose nodes can
import chorus). Prints rank 0's test accuracy; exits 1 below
EXAMPLE_MIN_ACCURACY (85). EXAMPLE_EPOCHS (2)."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_EXAMPLES = os.path.abspath(os.path.join(HERE, "..", "python"))


def main():
    workers = int(os.environ.get("EXAMPLE_WORKERS", "2"))
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
    min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
    # Ray's workers import examples/python's modules and chorus as this process does.
    os.environ["PYTHONPATH"] = os.pathsep.join([PYTHON_EXAMPLES] + sys.path)
    sys.path.insert(0, PYTHON_EXAMPLES)
    import fashion_mnist_rank  # one rank's part, run in each actor (examples/python)
    import ray

    from chorus.ray import RayExecutor
    ray.init(address=os.environ.get("RAY_ADDRESS"), num_cpus=None if os.environ.get("RAY_ADDRESS") else workers,
             include_dashboard=False)
    began = time.monotonic()
    executor = RayExecutor(RayExecutor.create_settings(timeout_s=120), num_workers=workers)
    executor.start()
    try:
        results = executor.run(fashion_mnist_rank.train, args=[epochs])
    finally:
        executor.shutdown()
        ray.shutdown()
    print(f"test accuracy {results[0]:.2f} % after {epochs} epochs on {workers} Ray actors "
          f"({time.monotonic() - began:.0f} s)", flush=True)
    if results[0] < min_accuracy:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
