"""``curteach make-dataset`` and ``curteach dataset-info``: navigation task datasets."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from curteach_teaching.commands import babyai_dataset
from curteach_teaching.commands.sweep_options import progress_wanted

_KIND_NAMES = {"shortest-path": "shortest_path", "tsp": "tsp"}


def add_parser(subparsers) -> None:
    """Register ``curteach make-dataset`` and ``curteach dataset-info``."""
    make = subparsers.add_parser(
        "make-dataset",
        help="generate a dataset of demonstrations: navigation tasks (shortest-path, tsp; one .npz file or "
        "Minari datasets) or BabyAI bot episodes (Minari datasets)",
        description="Generate a navigation dataset with the original's procedure (seeded, in parallel).",
    )
    make.add_argument("kind", choices=sorted([*_KIND_NAMES, "babyai"]), help="task family")
    make.add_argument("--split-sizes", default="paper", choices=["paper", "small"],
                      help="'paper': the original's counts; 'small': a quick set (default: paper)")
    make.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    make.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    make.add_argument("--out", type=Path, required=True,
                      help="output .npz file (--format minari and babyai: a datasets folder)")
    make.add_argument("--format", choices=["npz", "minari"], default="npz",
                      help="'npz': one file; 'minari': one Minari dataset per split, curteach/<kind>/<split>-v0 under "
                      "--out (MINARI_DATASETS_PATH=OUT loads them by id; docs/datasets.md) (default: npz)")
    make.add_argument("--minari-storage", choices=["hdf5", "arrow"], default="hdf5",
                      help="Minari's storage format with --format minari (default: hdf5)")
    make.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    make.add_argument("--overwrite", action="store_true",
                      help="replace an existing --out file (babyai: existing datasets of the same levels) instead of "
                      "refusing")
    babyai_dataset.add_arguments(make)
    make.set_defaults(func=run_make)

    info = subparsers.add_parser(
        "dataset-info",
        help="print per-split counts and means of a navigation dataset file",
        description="Per split: tasks, demonstrations, mean length, optimal reward, optimal paths and (TSP) "
        "greedy gap.",
    )
    info.add_argument("file", type=Path, help="dataset file written by make-dataset")
    info.add_argument("--json", action="store_true", help="print one JSON object keyed by split")
    info.add_argument("--verify", action="store_true",
                      help="also replay every demonstration and check its stored reward and length")
    info.set_defaults(func=run_info)


def _check_output_file(out: Path, overwrite: bool) -> None:
    """A one-line error before generating anything if ``out`` cannot become the dataset file, or is one already
    (a dataset is minutes to hours of work: replaced only when asked)."""
    if not str(out).strip() or out.name in ("", ".", ".."):
        raise ValueError(f"--out must name a file; got {str(out)!r}")
    if out.exists() and not out.is_file():
        raise ValueError(f"--out {str(out)!r} exists and is not a file")
    if out.exists() and not overwrite:
        raise ValueError(f"--out {str(out)!r} exists; pass --overwrite to replace it, or choose another --out")
    from curteach_teaching.sweeps.folders import check_writable

    check_writable(out.parent)


def run_make(args: argparse.Namespace) -> int:
    """Generate and save a navigation dataset; finished chunks are kept in ``OUT.chunks/`` until the file is
    written, so an interrupted command resumes where it stopped."""
    import shutil

    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset
    from curteach_teaching.commands.sweep_options import named_as_options
    from curteach_teaching.sweeps.interrupts import interruption_message

    if args.kind == "babyai":
        with named_as_options(args):  # --episodes, --seed, --workers: the flags, not the library's names
            return babyai_dataset.run(args)
    babyai_dataset.check_unused(args)
    minari = args.format == "minari"
    if minari:
        from curteach_teaching.datasets.navigation import check_minari_out

        if args.overwrite:
            raise ValueError("--overwrite replaces an --out file (--format npz) or BabyAI datasets; remove the Minari "
                             "datasets to write them again")
        check_minari_out(args.out, args.kind)
    else:
        _check_output_file(args.out, args.overwrite)
    chunks = args.out.with_name(args.out.name + ".chunks")

    def interrupted() -> str:
        saved = len(list(chunks.glob("chunk-*.npz")))
        return f"interrupted: {saved} chunks saved in {chunks}; run the same command again to resume"

    start = time.perf_counter()
    with interruption_message(interrupted):
        try:
            with named_as_options(args):  # a bad --seed or --workers is refused before any work, named as the flag
                dataset = generate_dataset(_KIND_NAMES[args.kind], args.split_sizes, seed=args.seed,
                                           workers=args.workers, progress=progress_wanted(args), chunk_dir=chunks)
        except KeyboardInterrupt:
            from curteach_teaching.sweeps.interrupts import announce

            announce()
            raise
    elapsed = time.perf_counter() - start
    if minari:
        from curteach_teaching.datasets.navigation import write_navigation_dataset

        paths = write_navigation_dataset(dataset, args.out, data_format=args.minari_storage)
        path = ", ".join(str(p) for p in paths)
    else:
        path = save_dataset(dataset, args.out)
    shutil.rmtree(chunks, ignore_errors=True)
    counts = ", ".join(
        f"{name} {split.n_tasks} tasks / {split.n_demos} demos" for name, split in dataset.splits.items()
    )
    print(f"wrote {path} ({args.kind}, seed {args.seed}): {counts}; generated in {elapsed:.1f} s")
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
