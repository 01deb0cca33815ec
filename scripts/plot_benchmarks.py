#!/usr/bin/python3
"""Draw the plots of docs/performance.md from the benchmarks' own output.

  scripts/plot_benchmarks.py busbw SWEEP.txt [-o PNG]
      SWEEP.txt: what `chorusrun -np N benchmarks/collective_benchmark
      --sections sweep ...` printed (saved with `> SWEEP.txt`). Draws busbw
      against message size for Chorus and MPI_Allreduce (measured in the same
      run, on the same buffers), for each kind of buffer in the file, and the
      speedup below. Default PNG: docs/img/busbw_np<N>.png.

  scripts/plot_benchmarks.py ddp COMPARE.txt... [-o PNG]
      COMPARE.txt: what `scripts/compare_ddp.sh ...` printed (saved with
      `> COMPARE.txt 2>&1`; the per-round lines on stderr add one dot per
      round). One panel per file (e.g. --malloc tuned and out-of-box): images/s
      at np = 1 and 2 for PyTorch DDP and Chorus, and the ceiling (two
      independent np=1 jobs). Default PNG: docs/img/ddp_resnet18.png.

Needs matplotlib (Debian: python3-matplotlib, for /usr/bin/python3); only
drawing the docs' plots needs it, nothing in the build does.
"""
import argparse
import math
import os
import re
import sys
from dataclasses import dataclass, field

try:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import matplotlib.ticker
except ImportError:
    sys.exit("plot_benchmarks: matplotlib is missing: apt-get install python3-matplotlib "
             "(and run this with /usr/bin/python3)")


class InputError(Exception):
    """The saved output is not what the benchmark prints; the text names the file and line."""


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def save(fig, output, default_in_repo):
    """Writes the figure to `output`, or to the repository's `default_in_repo`; returns the path."""
    path = output or os.path.join(REPO_ROOT, default_in_repo)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- sweep ----

@dataclass
class SweepTable:
    buffers: str  # "heap" or "shared"
    bytes: list = field(default_factory=list)
    chorus_busbw: list = field(default_factory=list)
    mpi_busbw: list = field(default_factory=list)  # MPI on the same buffers
    speedup: list = field(default_factory=list)    # the benchmark's own column
    wrong: int = 0
    fell_back: list = field(default_factory=list)  # sizes the arena gave ordinary memory


RANKS_LINE = re.compile(r"^# Chorus \S+ collective benchmark, (\d+) ranks?")
TABLE_LINE = re.compile(r"^# sweep: .*?, (heap buffers|buffers from chorus::allocate_shared_host)")
FALLBACK_LINE = re.compile(r"^# \((\d+) bytes: the arena gave ordinary memory")
SPEEDUP = re.compile(r"^([0-9.]+)x$")


def parse_sweep_row(line, table, where):
    """One row: bytes elements | chorus us algbw busbw #wrong | mpi us algbw busbw #wrong | [mpi heap us |] speedup."""
    parts = [p.split() for p in line.split("|")]
    expected = 5 if table.buffers == "shared" else 4
    speedup = SPEEDUP.match(parts[-1][0]) if len(parts) == expected and parts[-1] else None
    if speedup is None or len(parts[1]) != 4 or len(parts[2]) != 4:
        raise InputError(f"{where}: not a sweep row of a {table.buffers} table: {line.strip()!r}")
    try:
        table.bytes.append(int(parts[0][0]))
        table.chorus_busbw.append(float(parts[1][2]))
        table.mpi_busbw.append(float(parts[2][2]))
        table.wrong += int(parts[1][3]) + int(parts[2][3])
    except ValueError as e:
        raise InputError(f"{where}: {e} in {line.strip()!r}") from None
    table.speedup.append(float(speedup.group(1)))


def parse_sweep(path):
    """Returns (ranks, [SweepTable]) from a collective_benchmark log."""
    ranks, tables = None, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            where = f"{path}:{number}"
            if m := RANKS_LINE.match(line):
                ranks = int(m.group(1))
            elif m := TABLE_LINE.match(line):
                tables.append(SweepTable("heap" if m.group(1) == "heap buffers" else "shared"))
            elif m := FALLBACK_LINE.match(line):
                if tables:
                    tables[-1].fell_back.append(int(m.group(1)))
            elif tables and line.strip() and not line.lstrip().startswith(("#", "bytes")):
                if re.match(r"^\s*\d", line) and "|" in line:
                    parse_sweep_row(line, tables[-1], where)
    if ranks is None:
        raise InputError(f"{path}: no '# Chorus ... collective benchmark, N ranks' line: "
                         "is this collective_benchmark's output (rank 0's stdout)?")
    tables = [t for t in tables if t.bytes]
    if not tables:
        raise InputError(f"{path}: no sweep table with rows: run the benchmark with --sections sweep")
    return ranks, tables


def size_label(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


BUFFER_NAMES = {"heap": "heap buffers", "shared": "arena buffers (allocate_shared_host)"}
BUFFER_COLOURS = {"heap": "tab:blue", "shared": "tab:orange"}


def plot_busbw(path, output):
    ranks, tables = parse_sweep(path)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    for t in tables:
        colour, name = BUFFER_COLOURS[t.buffers], BUFFER_NAMES[t.buffers]
        top.plot(t.bytes, t.chorus_busbw, "o-", color=colour, label=f"Chorus, {name}")
        top.plot(t.bytes, t.mpi_busbw, "s--", color=colour, alpha=0.7, label=f"MPI_Allreduce, {name}")
        bottom.plot(t.bytes, t.speedup, "o-", color=colour, label=name)
        if t.fell_back:
            print(f"plot_benchmarks: warning: {path}: at {', '.join(map(size_label, t.fell_back))} the arena "
                  "gave ordinary memory; those points of the arena curve are staged calls", file=sys.stderr)
        if t.wrong:
            print(f"plot_benchmarks: warning: {path}: {t.wrong} wrong elements in the {t.buffers} table",
                  file=sys.stderr)
    sizes = sorted({b for t in tables for b in t.bytes})
    top.set_xscale("log", base=2)
    top.set_ylabel("busbw, GB/s")
    top.set_title(f"allreduce, float32 sum, {ranks} ranks: Chorus and MPI_Allreduce in the same run")
    top.legend(fontsize="small")
    top.grid(True, which="major", alpha=0.3)
    bottom.axhline(1.0, color="grey", linewidth=1)
    bottom.set_yscale("log", base=2)
    speedups = [v for t in tables for v in t.speedup if v > 0]
    low, high = math.floor(math.log2(min(speedups + [1.0]))), math.ceil(math.log2(max(speedups + [1.0])))
    bottom.set_yticks([2.0 ** k for k in range(low, high + 1)])  # every power of two, 1x included
    bottom.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    bottom.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}x"))
    bottom.set_ylabel("Chorus speedup over the\nfaster MPI_Allreduce")
    bottom.set_xlabel("message size")
    bottom.set_xticks(sizes)
    bottom.set_xticklabels([size_label(b) for b in sizes], rotation=45)
    bottom.legend(fontsize="small")
    bottom.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return save(fig, output, f"docs/img/busbw_np{ranks}.png")


# ------------------------------------------------------------------ ddp ----

@dataclass
class DdpRun:
    setting: str                               # the --malloc setting
    rounds: int
    mean: dict = field(default_factory=dict)   # ("ddp"|"chorus"|"ceiling", np) -> images/s
    each: dict = field(default_factory=dict)   # same keys -> images/s of every round


HEADER = re.compile(r"^ResNet-18, .*; malloc (\S+): .*; mean of (\d+) round")
MEAN_ROWS = {"PyTorch DDP": "ddp", "Chorus": "chorus"}
ROUND_JOB = re.compile(r"^compare_ddp: round \d+/\d+: (ddp|chorus|ceiling) np=(\d)")
ROUND_RESULT = re.compile(r"^compare_ddp:\s+RESULT np=\d+ imgs_per_sec_total=([0-9.]+)")


def parse_ddp(path):
    run, job, each = None, None, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if m := ROUND_JOB.match(line):
                job = (m.group(1), int(m.group(2)))
            elif (m := ROUND_RESULT.match(line)) and job:
                each.setdefault(job, []).append(float(m.group(1)))
            elif m := HEADER.match(line):
                run = DdpRun(m.group(1), int(m.group(2)))
            elif run and (name := line[:12].strip()) in MEAN_ROWS:
                values = line[12:].split()
                run.mean[(MEAN_ROWS[name], 1)], run.mean[(MEAN_ROWS[name], 2)] = map(float, values[:2])
            elif run and line.startswith("No comm."):
                run.mean[("ceiling", 2)] = float(line[12:].split()[0])
    if run is None or len(run.mean) != 5:
        raise InputError(f"{path}: no complete 'ResNet-18, ... mean of R round(s)' table: "
                         "is this scripts/compare_ddp.sh's output (stdout), and did it finish?")
    run.each = each
    return run


def draw_ddp_panel(ax, run):
    width, bars = 0.25, [("ddp", "PyTorch DDP (gloo)", "tab:grey"), ("chorus", "Chorus", "tab:blue")]
    for i, (key, label, colour) in enumerate(bars):
        xs = [np_ - 1 + (i - 0.5) * width for np_ in (1, 2)]
        ys = [run.mean[(key, 1)], run.mean[(key, 2)]]
        ax.bar(xs, ys, width, color=colour, label=label)
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:.0f}", (x, y), xytext=(0, -4), textcoords="offset points", ha="center", va="top",
                        color="white", fontsize="small", fontweight="bold")
        for np_ in (1, 2):
            dots = run.each.get((key, np_), [])
            if len(dots) > 1:
                ax.plot([np_ - 1 + (i - 0.5) * width] * len(dots), dots, "k.", markersize=4)
    ceiling, ddp2 = run.mean[("ceiling", 2)], run.mean[("ddp", 2)]
    ax.hlines(ceiling, 0.6, 1.4, colors="tab:red", linestyles="dotted",
              label="ceiling: two independent np=1 jobs at once")
    ax.set_title(f"malloc {run.setting}, mean of {run.rounds} round(s)\n"
                 f"Chorus / DDP at np=2: {run.mean[('chorus', 2)] / ddp2:.2f}x, ceiling / DDP: {ceiling / ddp2:.2f}x",
                 fontsize="medium")
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["np=1", "np=2"])
    ax.grid(True, axis="y", alpha=0.3)


def plot_ddp(paths, output):
    runs = [parse_ddp(p) for p in paths]
    fig, axes = plt.subplots(1, len(runs), figsize=(max(7, 5 * len(runs) + 1), 5.5), sharey=True, squeeze=False)
    for ax, run in zip(axes[0], runs):
        draw_ddp_panel(ax, run)
    axes[0][0].set_ylim(0, 1.35 * max(run.mean[("ceiling", 2)] for run in runs))
    axes[0][0].set_ylabel("images/s over all ranks")
    axes[0][0].legend(fontsize="small", loc="upper left")
    fig.suptitle("ResNet-18 training, batch 32 per rank:\nChorus and PyTorch DDP measured in the same run")
    fig.tight_layout()
    return save(fig, output, "docs/img/ddp_resnet18.png")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="plot", required=True)
    busbw = sub.add_parser("busbw", help="busbw against message size from collective_benchmark --sections sweep")
    busbw.add_argument("sweep_output")
    busbw.add_argument("-o", "--output", help="PNG to write (default docs/img/busbw_np<N>.png)")
    ddp = sub.add_parser("ddp", help="training images/s against DDP from scripts/compare_ddp.sh")
    ddp.add_argument("compare_output", nargs="+")
    ddp.add_argument("-o", "--output", help="PNG to write (default docs/img/ddp_resnet18.png)")
    args = parser.parse_args()
    try:
        if args.plot == "busbw":
            written = plot_busbw(args.sweep_output, args.output)
        else:
            written = plot_ddp(args.compare_output, args.output)
    except (InputError, OSError) as e:
        sys.exit(f"plot_benchmarks: error: {e}")
    print(f"plot_benchmarks: wrote {written}")


if __name__ == "__main__":
    main()
