"""Elastic recovery on Ray against chorusrun, same machine, same workers in
the same run: 3 workers of an elastic counter (each step an allreduce of
64 doubles, a 50 ms step, commit); at step 40 one worker ends its process;
measured: from its end to the survivors' first completed step (in their
world of 2), and to the first step of the world of 3 again (a new worker
joined on the freed slot).

- ElasticRayExecutor(min_np=2, max_np=3) on a local Ray of 3 CPUs;
- chorusrun --min-np 2 --max-np 3 with 3 hosts (127.0.0.1-3) from a
  discovery script and a blacklist cooldown of 1-2 s (so the failed
  worker's host gets a new one), the same counter as a script.

Run: .venv/bin/python benchmarks/ray_elastic_recovery.py [--repeats 3]
(PYTHONPATH=python CHORUS_LIBRARY=build/core/libchorus.so from a source
tree). Prints each route's median seconds; checks every final model."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

STEPS, KILL_AT, WIDTH = 120, 40, 64


def counter(log_path, marker):
    """One worker: logs `STEP k size t` per step; the first rank 1 to reach
    KILL_AT ends its process (once: `marker`), logging `KILL t`."""
    import numpy as np

    import chorus
    from chorus import elastic
    chorus.init()
    state = elastic.ObjectState(chorus.broadcast_object, chorus.rank, step=0, model=np.zeros(WIDTH))

    def log(line):
        with open(log_path, "a") as f:
            f.write(f"{line} t={time.time():.4f}\n")

    @elastic.run
    def train(state):
        while state.step < STEPS:
            gradient = np.full(WIDTH, float(state.step % 7 + 1))
            state.model = state.model + chorus.allreduce(gradient, op=chorus.Average, name="grad")
            state.step += 1
            log(f"STEP {state.step} size={chorus.size()}")
            if state.step == KILL_AT and chorus.rank() == 1 and not os.path.exists(marker):
                open(marker, "w").close()
                log("KILL")
                os._exit(3)
            time.sleep(0.05)
            state.commit()
    train(state)
    want = sum(float(k % 7 + 1) for k in range(STEPS)) * WIDTH
    assert abs(float(state.model.sum()) - want) < 1e-6 * want, (float(state.model.sum()), want)
    return state.step


def recovery(log_path):
    """(kill -> the first step of a world of 2, kill -> the first step of a
    world of 3 after that) in seconds (steps of the old world of 3 that
    finished after the kill do not count)."""
    lines = [line.split() for line in open(log_path)]
    killed = next(float(w[-1][2:]) for w in lines if w[0] == "KILL")

    def first(size, after):
        return min(float(w[-1][2:]) for w in lines if w[0] == "STEP" and w[2] == f"size={size}"
                   and float(w[-1][2:]) > after)
    in_two = first(2, killed)
    return in_two - killed, first(3, in_two) - killed


def on_ray(work):
    from chorus.ray import ElasticRayExecutor
    executor = ElasticRayExecutor(ElasticRayExecutor.create_settings(min_np=2, max_np=3, elastic_timeout=60))
    executor.start()
    log = os.path.join(work, "ray.log")
    assert executor.run(counter, args=[log, os.path.join(work, "ray.killed")]) == [STEPS] * 3
    return recovery(log)


def on_chorusrun(work):
    from chorus import launcher
    hosts = os.path.join(work, "hosts.sh")
    with open(hosts, "w") as f:
        f.write("#!/bin/sh\n" + "".join(f"echo 127.0.0.{i}:1\n" for i in (1, 2, 3)))
    os.chmod(hosts, 0o755)
    log = os.path.join(work, "run.log")
    # The failed worker's host is blacklisted for 1-2 s, then gets a new worker (as Ray's freed CPU does).
    subprocess.run([launcher.binary(), "--min-np", "2", "--max-np", "3", "--host-discovery-script", hosts,
                    "--blacklist-cooldown-range", "1", "2",
                    sys.executable, os.path.abspath(__file__), "--worker", log, os.path.join(work, "run.killed")],
                   check=True)
    return recovery(log)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)  # chorusrun's workers: LOG MARKER
    args = parser.parse_args()
    if args.worker:
        counter(*args.worker)
        return
    os.environ["PYTHONPATH"] = os.pathsep.join(sys.path)  # Ray's workers and chorusrun's import chorus
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    ray_runs, chorusrun_runs = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as work:
            ray_runs.append(on_ray(work))
        with tempfile.TemporaryDirectory() as work:
            chorusrun_runs.append(on_chorusrun(work))
    ray.shutdown()
    for name, runs in (("ElasticRayExecutor", ray_runs), ("chorusrun --min-np", chorusrun_runs)):
        to2, to3 = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"{name:20s} kill -> survivors' first step {to2:.2f} s, -> first step of 3 again {to3:.2f} s  "
              f"(all: {', '.join(f'{a:.2f}/{b:.2f}' for a, b in runs)})")


if __name__ == "__main__":
    main()
