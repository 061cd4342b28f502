"""Time of one batched greedy evaluation of the paper-size shortest-path validation and test splits.

A freshly initialised navigation network (NavigationCNNPolicy, seed 0) is rolled out on every task of the split at
once (curteach_teaching.evaluation.evaluate_split), on one torch thread by default. The paper-size dataset (seed 0) is
generated once into results/nav-datasets/ if missing (about 30 s on 2 cores).

The original evaluates one datapoint at a time: 7-35 s per test evaluation on one thread (docs/experiments/nav.md).
Target here (issue 11): a test evaluation <= 3 s on one thread. Prints figures; asserts nothing.

    python benchmarks/nav_eval.py [--threads 1] [--repeats 3] [--seed 0] [--device cpu] [--no-skip-cycles]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from curteach_envs.datasets import generate_dataset, load_dataset, save_dataset
from curteach_teaching.evaluation import TaskBatch, evaluate_split
from curteach_teaching.learners.networks import NavigationCNNPolicy

DATASET = Path(__file__).resolve().parents[1] / "results" / "nav-datasets" / "shortest_path-paper-seed0.npz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="timed evaluations per split (the best is reported)")
    parser.add_argument("--seed", type=int, default=0, help="network seed")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-skip-cycles", action="store_true", help="step looping episodes to the horizon")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not args.dataset.is_file():
        print(f"generating the paper-size shortest-path dataset into {args.dataset} ...", flush=True)
        start = time.perf_counter()
        dataset = generate_dataset("shortest_path", "paper", seed=0, progress=False)
        args.dataset.parent.mkdir(parents=True, exist_ok=True)
        save_dataset(dataset, args.dataset)
        print(f"  generated in {time.perf_counter() - start:.1f} s", flush=True)
    dataset = load_dataset(args.dataset)
    policy = NavigationCNNPolicy.for_navigation(seed=args.seed, device=args.device)
    skip = not args.no_skip_cycles
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {args.device}, "
          f"skip_cycles={skip}, fresh network seed {args.seed}")
    for name in ("val", "test"):
        split = dataset[name]
        batch = TaskBatch.from_split(split)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = evaluate_split(policy, split, batch=batch, device=args.device, skip_cycles=skip)
            times.append(time.perf_counter() - start)
        lengths = np.bincount(result.task_lengths, minlength=31)
        print(f"{name:4s}: {split.n_tasks} tasks / {split.n_demos} datapoints, mean return "
              f"{result.mean_return:.4f}, evaluation {min(times):.3f} s (best of {args.repeats}; all "
              f"{', '.join(f'{t:.3f}' for t in times)}); episodes terminated {result.task_terminated.mean():.1%}, "
              f"lengths 1-5 / 6-29 / 30: {lengths[1:6].sum()} / {lengths[6:30].sum()} / {lengths[30]}")


if __name__ == "__main__":
    main()
