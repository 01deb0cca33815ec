"""Startup of a job to its first completed allreduce, for scripts/bench_tcp.sh:
runs COMMAND (a launcher starting test/launcher's rank_report, which prints a
REPORT line right after its first allreduce), and prints the seconds from the
start until every rank's REPORT line came, and until the job ended.
usage: startup_time.py RANKS COMMAND [ARGS...]"""
import subprocess
import sys
import time


def main():
    ranks, cmd = int(sys.argv[1]), sys.argv[2:]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen, first_done, tail = 0, None, []
    for line in p.stdout:
        tail = (tail + [line.rstrip()])[-5:]
        if "REPORT rank=" in line:
            seen += 1
            if seen == ranks:
                first_done = time.perf_counter() - t0
    rc = p.wait()
    ended = time.perf_counter() - t0
    if rc != 0 or first_done is None:
        print("\n".join(tail), file=sys.stderr)
        sys.exit(f"startup_time: {' '.join(cmd)}: exit {rc}, {seen} of {ranks} ranks reported")
    print(f"{first_done:.3f} {ended:.3f}")


if __name__ == "__main__":
    main()
