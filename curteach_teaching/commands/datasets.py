"""``curteach make-dataset SOURCE`` (every registered dataset source, each with its own flags) and ``curteach
dataset-info`` (a navigation dataset file's statistics)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from curteach_teaching.commands.sweep_options import named_as_options, progress_wanted


def add_parser(subparsers) -> None:
    """Register ``curteach make-dataset`` (one sub-command per source of
    :data:`~curteach_teaching.datasets.sources.SOURCES`) and ``curteach dataset-info``."""
    from curteach_teaching.datasets.sources import sources

    found = sources()
    make = subparsers.add_parser(
        "make-dataset",
        help="generate a dataset of demonstrations: " + ", ".join(name for name, _, _ in found),
        description="Generate a dataset of demonstrations with one of the registered sources (seeded; every "
        "argument is checked before any work). Sources: " + "; ".join(
            f"{name}: {source.summary}" if source is not None else f"{name}: (fails to load: {error})"
            for name, source, error in found) + ". `curteach make-dataset SOURCE --help` lists a source's flags.",
    )
    kinds = make.add_subparsers(dest="source", metavar="SOURCE", required=True)
    for name, source, error in found:
        sub = kinds.add_parser(name, help=source.summary if source is not None else f"fails to load: {error}",
                               description=source.summary if source is not None else error)
        sub.add_argument("--out", type=Path, required=True,
                         help="where to write (a file or a datasets folder, as the source says)")
        sub.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
        sub.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
        sub.add_argument("--overwrite", action="store_true",
                         help="replace what --out holds of this source's datasets instead of refusing")
        sub.add_argument("--no-progress", action="store_true", help="hide the progress bar")
        if source is not None:
            source.add_arguments(sub)
        sub.set_defaults(func=run_make, source_error=error)

    info = subparsers.add_parser(
        "dataset-info",
        help="print per-split counts and means of a navigation dataset file",
        description="Per split: tasks, demonstrations, mean length, optimal reward, optimal paths and (TSP) "
        "greedy gap.",
    )
    info.add_argument("file", type=Path, help="dataset file written by make-dataset shortest-path|tsp")
    info.add_argument("--json", action="store_true", help="print one JSON object keyed by split")
    info.add_argument("--verify", action="store_true",
                      help="also replay every demonstration and check its stored reward and length")
    info.set_defaults(func=run_info)


def run_make(args: argparse.Namespace) -> int:
    """Check every argument of the chosen source (nothing written on a bad one), generate, and say what was
    written; Ctrl-C prints the source's line of what it kept."""
    from curteach_teaching.datasets.sources import load_source
    from curteach_teaching.sweeps.interrupts import announce, interruption_message

    source = load_source(args.source)  # a plug-in that failed to load fails here, in one line
    with named_as_options(args):  # a library name in a message (seed must be ...) becomes the flag (--seed)
        source.check(args)
    start = time.perf_counter()
    def interrupted() -> str:  # a source that does not subclass DatasetSource may have no line of its own
        line = getattr(source, "interrupted", None)
        return line(args) if callable(line) else f"interrupted: make-dataset {args.source} wrote nothing"

    with interruption_message(interrupted):
        try:
            with named_as_options(args):
                written = source.generate(args, progress=progress_wanted(args))
        except KeyboardInterrupt:
            announce()
            raise
    elapsed = time.perf_counter() - start
    print(f"make-dataset {args.source} (seed {args.seed}) wrote {len(written)} in {elapsed:.1f} s:")
    for path in written:
        print(f"  {path}")
    return 0


_COLUMNS = (
    ("tasks", "tasks", "{:d}"),
    ("demonstrations", "demos", "{:d}"),
    ("mean_length", "length", "{:.3f}"),
    ("mean_reward", "reward", "{:.3f}"),
    ("mean_num_optimal_paths", "opt.paths", "{:.3f}"),
    ("mean_greedy_gap", "greedy gap", "{:.3f}"),
)


def run_info(args: argparse.Namespace) -> int:
    """Print a dataset file's statistics per split."""
    from curteach_envs.navigation.dataset import load_dataset

    dataset = load_dataset(args.file, verify=args.verify)
    stats = dataset.statistics()
    if args.json:
        print(json.dumps(stats, indent=None, sort_keys=False))
        return 0
    meta = dataset.meta
    print(f"{args.file}: {dataset.kind} dataset, seed {meta.get('seed')}, split sizes {meta.get('split_sizes')}")
    columns = [c for c in _COLUMNS if c[0] in next(iter(stats.values()))]
    print(f"{'split':6s} " + " ".join(f"{label:>10s}" for _, label, _ in columns))
    for name, row in stats.items():
        print(f"{name:6s} " + " ".join(f"{fmt.format(row[key]):>10s}" for key, _, fmt in columns))
    return 0
