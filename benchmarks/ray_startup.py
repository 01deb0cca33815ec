"""A Chorus job's start-up on Ray against chorusrun, same 2 workers, same
machine: from asking for the job to its first allreduce done.

- RayExecutor: start() (placement group, actors, rank environments) +
  run() of a function that inits Chorus and allreduces (Ray already up;
  ray.init's own time printed apart).
- chorusrun --tcp -np N: the launcher, N Python processes importing chorus,
  init and the same allreduce.

Run: .venv/bin/python benchmarks/ray_startup.py [--workers 2] [--repeats 5]
(PYTHONPATH=python CHORUS_LIBRARY=build/core/libchorus.so from a source
tree). Prints each route's median and the ratio; checks every sum."""
import argparse
import os
import statistics
import subprocess
import sys
import time

FIRST_ALLREDUCE = ("import numpy as np, chorus; chorus.init(); "
                   "s = chorus.allreduce(np.array([chorus.rank() + 1.0]), op=chorus.Sum); "
                   "assert s[0] == chorus.size() * (chorus.size() + 1) / 2, s")


def first_allreduce():
    import numpy as np

    import chorus
    chorus.init()
    return float(chorus.allreduce(np.array([chorus.rank() + 1.0]), op=chorus.Sum)[0])


def ray_executor_seconds(workers):
    from chorus.ray import RayExecutor
    began = time.monotonic()
    executor = RayExecutor(num_workers=workers)
    executor.start()
    sums = executor.run(first_allreduce)
    took = time.monotonic() - began
    executor.shutdown()
    assert sums == [workers * (workers + 1) / 2] * workers, sums
    return took


def chorusrun_seconds(workers):
    from chorus import launcher
    began = time.monotonic()
    subprocess.run([launcher.binary(), "--tcp", "-np", str(workers), sys.executable, "-c", FIRST_ALLREDUCE],
                   check=True)
    return time.monotonic() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(sys.path)  # Ray's workers import chorus as this process does
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    began = time.monotonic()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    ray_up = time.monotonic() - began
    ray_times = [ray_executor_seconds(args.workers) for _ in range(args.repeats)]
    ray.shutdown()
    run_times = [chorusrun_seconds(args.workers) for _ in range(args.repeats)]
    ray_median, run_median = statistics.median(ray_times), statistics.median(run_times)
    print(f"workers {args.workers}, repeats {args.repeats} (ray.init itself: {ray_up:.2f} s, once)")
    print(f"RayExecutor start()+first allreduce  median {ray_median:.2f} s  (all: "
          f"{', '.join(f'{t:.2f}' for t in ray_times)})")
    print(f"chorusrun --tcp +first allreduce     median {run_median:.2f} s  (all: "
          f"{', '.join(f'{t:.2f}' for t in run_times)})")
    print(f"RayExecutor / chorusrun: {ray_median / run_median:.2f}x")


if __name__ == "__main__":
    main()
