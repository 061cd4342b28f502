"""Speed of BabyAI dataset generation and of the vectorised evaluator.

Usage: ``python benchmarks/babyai_generation.py [--episodes 400] [--eval-episodes 100] [--levels ...]``.

Prints, per level: bot episodes per second with 1 and with 2 worker processes (``generate_bot_episodes``; the
2-worker figure includes starting the processes), and Minari writing and reading per second (HDF5). Then episodes
per second of :func:`~curteach_teaching.experiments.dataset_bc.rollouts.evaluate_policy` against Gymnasium's
``SyncVectorEnv`` stepping the same number of envs with the same (untrained, so every episode runs to its step limit)
policy, greedy actions. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def _sync_vector_env_rate(policy, level: str, seeds: list[int]) -> float:
    """Episodes/s of a plain SyncVectorEnv loop: every env steps until its first episode ends (later ones ignored);
    the policy runs on all envs at every step, as a vector env requires."""
    import gymnasium as gym

    from curteach_teaching.experiments.dataset_bc.babyai_data import make_policy_env
    from curteach_teaching.experiments.dataset_bc.rollouts import policy_logits

    logits_of = policy_logits(policy)
    start = time.perf_counter()
    envs = gym.vector.SyncVectorEnv([lambda: make_policy_env(level) for _ in seeds])
    observations, _ = envs.reset(seed=seeds)
    finished = np.zeros(len(seeds), dtype=bool)
    while not finished.all():
        actions = logits_of(observations).argmax(axis=1)
        observations, _, terminated, truncated, _ = envs.step(actions)
        finished |= terminated | truncated
    envs.close()
    return len(seeds) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=400, help="bot episodes per level (default 400)")
    parser.add_argument("--eval-episodes", type=int, default=100, help="evaluation episodes (default 100)")
    parser.add_argument("--levels", default="GoToRedBallGrey,GoToLocal,PickupLoc,PutNextLocal")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from curteach_teaching.experiments.dataset_bc.babyai_data import (
        HELD_OUT_SEEDS,
        generate_bot_episodes,
        make_policy_env,
        plan_episodes,
        resolve_levels,
    )
    from curteach_teaching.experiments.dataset_bc.babyai_minari import (
        babyai_trajectories,
        load_babyai_dataset,
        write_level_dataset,
    )
    from curteach_teaching.experiments.dataset_bc.rollouts import evaluate_policy
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    levels = resolve_levels(args.levels)
    root = Path(tempfile.mkdtemp(prefix="babyai-generation-"))
    try:
        for level in levels:
            plans = plan_episodes([level], args.episodes, seed=0)
            rates = {}
            for workers in (1, 2):
                start = time.perf_counter()
                episodes = generate_bot_episodes(plans, workers=workers, progress=False)
                rates[workers] = len(plans) / (time.perf_counter() - start)
            start = time.perf_counter()
            path = write_level_dataset(level, episodes, root, data_format="hdf5")
            write_rate = len(plans) / (time.perf_counter() - start)
            start = time.perf_counter()
            babyai_trajectories(load_babyai_dataset(path))
            read_rate = len(plans) / (time.perf_counter() - start)
            print(f"{level:28s} bot episodes/s: {rates[1]:6.0f} (1 worker) {rates[2]:6.0f} (2 workers); "
                  f"Minari HDF5 write {write_rate:5.0f}/s, read as trajectories {read_rate:5.0f}/s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    policy = BabyAIFiLMPolicy.for_babyai(seed=0)
    seeds = list(HELD_OUT_SEEDS[: args.eval_episodes])
    for level in levels:
        start = time.perf_counter()
        results = evaluate_policy(policy, lambda level=level: make_policy_env(level), seeds)
        ours = len(seeds) / (time.perf_counter() - start)
        theirs = _sync_vector_env_rate(policy, level, seeds)
        print(f"{level:28s} evaluation of {len(seeds)} untrained greedy episodes (mean length "
              f"{results.lengths.mean():.0f}): evaluate_policy {ours:6.1f} episodes/s, SyncVectorEnv {theirs:6.1f} "
              f"episodes/s (ratio {ours / theirs:.2f})", flush=True)


if __name__ == "__main__":
    main()
