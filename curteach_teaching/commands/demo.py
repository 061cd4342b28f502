"""``curteach demo``: build a road, plan the expert, print its value per task type, save a picture of the road.

``curteach demo-reading``: the reading of ``make demo``'s two car-irl sweeps, the paper's teaching rate against a
smaller one on the same roads (:mod:`curteach_teaching.experiments.car.reading`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def add_parser(subparsers) -> None:
    """Register ``curteach demo``."""
    parser = subparsers.add_parser(
        "demo", help="build a car road, plan the expert, save a picture",
        description="Build one car road (CarTeach-v0) from --layout-seed, plan the expert's optimal policy on its "
        "exact tabular export and save a picture of the road with the expert's expected return (the first step of "
        "make demo).",
    )
    parser.add_argument("--out", type=Path, default=Path("results/demo"), help="output folder")
    parser.add_argument("--layout-seed", type=int, default=0, help="seed of the road layout")
    parser.add_argument("--gamma", type=float, default=0.99, help="discount")
    parser.set_defaults(func=run)

    reading = subparsers.add_parser(
        "demo-reading", help="read two car-irl sweeps: the paper's teaching rate against a smaller one",
        description="Read two finished curteach car-irl folders with the same seed (the same roads), the first at "
        "the paper's --teaching-rate 0.17, the second at a smaller one; print in a few lines who leads over all "
        "runs at each rate and what the original code would have reported (it crashes in some runs at 0.17), and "
        "draw it (make demo runs this after its two car-irl sweeps).",
    )
    reading.add_argument("paper", type=Path, help="the car-irl folder at the paper's rate (e.g. results/demo/car-irl)")
    reading.add_argument("smaller", type=Path, help="the car-irl folder of the same runs at a smaller rate")
    reading.add_argument("--out", type=Path, default=None,
                         help="the figure (default: car_irl_reading.png in the first folder's parent)")
    reading.set_defaults(func=run_reading)


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


def run_reading(args: argparse.Namespace) -> int:
    """Print the reading of two car-irl sweeps and draw it."""
    import textwrap

    from curteach_teaching.experiments.car.reading import car_reading, load_sweep_finals, plot_car_reading

    paper, smaller = load_sweep_finals(args.paper), load_sweep_finals(args.smaller)
    for line in car_reading(paper, smaller):
        print(textwrap.fill(line, width=116, subsequent_indent="  ", break_on_hyphens=False))
    out = args.out if args.out is not None else args.paper.parent / "car_irl_reading.png"
    print(f"wrote {plot_car_reading(paper, smaller, out)}")
    return 0
