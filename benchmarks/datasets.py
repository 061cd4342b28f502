"""Generation time and statistics of the paper-size navigation datasets.

The original needs about 616 s (shortest path) and 1.5-3 h (TSP) on one core (see docs/environments/navigation.md).
Targets here: under 30 s and under 3 min on a 2-core machine. Prints figures; asserts nothing.

    python benchmarks/datasets.py [--workers N] [--seed S] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from curteach_envs.navigation.dataset import load_dataset, save_dataset
from curteach_envs.navigation.generate import generate_dataset
from curteach_teaching.demonstrations import navigation_trajectories

# The original's figures to compare against (docs/environments/navigation.md, measured on its generator).
REFERENCE = {
    "shortest_path": "original: ~616 s on one core; demos train/val/test ~16,921 / 1,711 / 5,096",
    "tsp": "original: 1.5-3 h on one core; tasks 6,000 / 300 / 1,500; measured by running the original's sampling "
           "code (docs/deviations.md): acceptance 0.76 / 0.60 / 0.55, stored tour longer than the optimum in "
           "3.7% / 0.5% / 1.1% for G = 2 / 3 / 4 (a description of the original quoted 0.70-0.76 and "
           "4.0% / 1.3% / 2.0%, which its code does not give)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="keep the files in this folder")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="curteach-bench-"))
    print(f"{os.cpu_count()} cores, {args.workers} workers, seed {args.seed}")
    for kind in ("shortest_path", "tsp"):
        start = time.perf_counter()
        dataset = generate_dataset(kind, "paper", seed=args.seed, workers=args.workers, progress=False)
        generated = time.perf_counter() - start
        path = save_dataset(dataset, out / f"{kind}.npz")
        start = time.perf_counter()
        loaded = load_dataset(path)
        load_time = time.perf_counter() - start
        start = time.perf_counter()
        n_obs = sum(t.obs.shape[0] for t in navigation_trajectories(loaded["train"]))
        traj_time = time.perf_counter() - start
        print(f"\n== {kind}: generated in {generated:.1f} s, file {path.stat().st_size / 1e6:.2f} MB, "
              f"loaded and validated in {load_time:.2f} s, train trajectories ({n_obs} observations) in "
              f"{traj_time:.2f} s")
        print(f"   ({REFERENCE[kind]})")
        for name, stats in loaded.statistics().items():
            print(f"   {name:5s} " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                           for k, v in stats.items()))
        if kind == "tsp":
            train = loaded["train"]
            goals = train.n_goals  # per demonstration; TSP has one demonstration per task
            task_goals = np.array([task.n_goals for task in train.tasks])
            for g in (2, 3, 4):
                sel = goals == g
                worse = (train["reward"][sel] < train["exact_reward"][sel]).mean()
                negative = (train.greedy_gap[sel] < 0).mean()
                tasks = task_goals == g
                acceptance = tasks.sum() / train["tries"][tasks].sum()
                print(f"   train G={g}: acceptance {acceptance:.3f}, "
                      f"stored tour longer than the exact optimum in {100 * worse:.1f}% "
                      f"(max {int((train['exact_reward'][sel] - train['reward'][sel]).max())} actions), "
                      f"greedy gap < 0 in {100 * negative:.1f}%")
    if args.out is None:
        for f in out.iterdir():
            f.unlink()
        out.rmdir()


if __name__ == "__main__":
    main()
