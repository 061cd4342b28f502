"""``curteach demo``: build a road, plan the expert, print its value per task type, save a picture of the road."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def add_parser(subparsers) -> None:
    """Register ``curteach demo``."""
    parser = subparsers.add_parser("demo", help="build a car road, plan the expert, save a picture")
    parser.add_argument("--out", type=Path, default=Path("results/demo"), help="output folder")
    parser.add_argument("--layout-seed", type=int, default=0, help="seed of the road layout")
    parser.add_argument("--gamma", type=float, default=0.99, help="discount")
    parser.set_defaults(func=run)


def expert_value_per_type(env) -> np.ndarray:
    """``(8, n_instances)`` expert value of every task, by task type."""
    from curteach_teaching.planning import hard_value_iteration

    mdp = env.tabular()
    values = hard_value_iteration(mdp).values[mdp.start_states]
    return values.reshape(env.n_instances, -1).T


def run(args: argparse.Namespace) -> int:
    """Draw a road and print the expert's value per task type."""
    from curteach_envs import CarTeachEnv
    from curteach_teaching.plots import plot_road

    env = CarTeachEnv(layout_seed=args.layout_seed, gamma=args.gamma)
    values = expert_value_per_type(env)
    print(f"CarTeach-v0, layout_seed={args.layout_seed}, gamma={args.gamma}: expert value per task")
    print("type   mean     " + "  ".join(f"inst{j}" for j in range(values.shape[1])))
    for k, row in enumerate(values):
        print(f"T{k}  {row.mean():7.3f}   " + "  ".join(f"{v:5.2f}" for v in row))
    print(f"all   {values.mean():7.3f}  (the expected reward of the expert under the uniform start distribution)")
    args.out.mkdir(parents=True, exist_ok=True)
    path = plot_road(env, args.out / "road.png",
                     title=f"CarTeach-v0 road (layout_seed={args.layout_seed}): columns T0..T7, rows instances; "
                     "each task starts at its bottom row")
    print(f"wrote {path}")
    return 0
