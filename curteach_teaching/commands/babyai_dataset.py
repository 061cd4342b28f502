"""``curteach make-dataset babyai``: one Minari dataset of BabyAI bot demonstrations per level.

Registered by :mod:`curteach_teaching.commands.datasets` (the ``make-dataset`` command); this module adds the
BabyAI flags and runs the generation.
"""

from __future__ import annotations

import argparse
import time

from curteach_teaching.commands.sweep_options import progress_wanted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags only ``make-dataset babyai`` reads."""
    babyai = parser.add_argument_group("babyai", "flags of `make-dataset babyai` (one Minari dataset per level)")
    babyai.add_argument("--levels", default=None,
                        help="comma-separated BabyAI levels, Gymnasium ids or short names (GoToLocal)")
    babyai.add_argument("--episodes", type=int, default=None, help="bot episodes per level")
    babyai.add_argument("--noise", type=float, default=0.0,
                        help="share of the episodes that take a random action with probability 0.5 per step "
                             "(default 0)")


def run(args: argparse.Namespace) -> int:
    """Generate and write the datasets; print where they are."""
    from curteach_teaching.experiments.dataset_bc.babyai_minari import write_babyai_datasets

    if not args.levels or args.episodes is None:
        raise ValueError("make-dataset babyai needs --levels and --episodes")
    start = time.perf_counter()
    written = write_babyai_datasets(args.out, args.levels, args.episodes, args.seed, noise=args.noise,
                                    workers=args.workers, progress=progress_wanted(args),
                                    overwrite=args.overwrite)
    elapsed = time.perf_counter() - start
    print(f"wrote {len(written)} Minari datasets ({args.episodes} episodes each, seed {args.seed}, noise "
          f"{args.noise}) in {elapsed:.1f} s:")
    for path in written.values():
        print(f"  {path}")
    return 0


def check_unused(args: argparse.Namespace) -> None:
    """A one-line error when a BabyAI-only flag is given to another kind of dataset."""
    given = [flag for flag, value in (("--levels", args.levels), ("--episodes", args.episodes),
                                      ("--noise", args.noise or None)) if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)} only apply to make-dataset babyai")
