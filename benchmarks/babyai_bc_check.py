"""Does imitation's BC train the BabyAI FiLM policy as well as the prototype of docs/experiments/babyai.md?

Usage: ``python benchmarks/babyai_bc_check.py [--episodes 2000] [--steps 2800] [--eval-at 1000,2800]
[--eval-episodes 100] [--workers 2] [--seed 0] [--data DIR]``.

Generates ``--episodes`` bot episodes per level of GoToRedBallGrey, GoToLocal, PickupLoc and PutNextLocal (or reuses
the datasets in ``--data``), trains :class:`BabyAIFiLMPolicy` with ``imitation.algorithms.bc.BC`` (batch 256, Adam
1e-3, BC's default entropy weight 1e-3 and no L2) on all of them together, and prints greedy and sampled-action
success on the held-out seeds ``0 .. eval-episodes - 1`` of each level at the steps of ``--eval-at``, with wall
times. The prototype reached 94-96 / 89-92 / 83-88 / 34 % greedy at about 2,800 steps. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

LEVELS = ("GoToRedBallGrey", "GoToLocal", "PickupLoc", "PutNextLocal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=2800)
    parser.add_argument("--eval-at", default="1000,2800")
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=None, help="folder of datasets (generated there if missing)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from imitation.algorithms import bc
    from imitation.data import rollout
    from imitation.util import logger as imit_logger
    from stable_baselines3.common import logger as sb_logger

    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.codecs import codec_for
    from curteach_teaching.datasets.sources.babyai import dataset_id, write_babyai_datasets
    from curteach_teaching.datasets.sources.babyai_bot import make_policy_env, resolve_levels
    from curteach_teaching.datasets.sources.base import HELD_OUT_SEEDS
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy
    from curteach_teaching.rollouts import evaluate_policy

    levels = resolve_levels(LEVELS)
    data = args.data or Path(tempfile.mkdtemp(prefix="babyai-bc-check-"))
    begin = time.perf_counter()
    if not all((data / dataset_id(level)).exists() for level in levels):
        write_babyai_datasets(data, levels, args.episodes, args.seed, workers=args.workers, progress=False,
                              overwrite=True)
    generated = time.perf_counter()
    pool = read_pool([data / dataset_id(level) for level in levels])
    trajectories = codec_for(pool.observation_space).trajectories(pool.trajectories)
    transitions = rollout.flatten_trajectories(trajectories)
    loaded = time.perf_counter()
    print(f"data: {args.episodes} episodes x {len(levels)} levels in {data}: {len(transitions)} pairs; "
          f"generated in {generated - begin:.1f} s, loaded in {loaded - generated:.1f} s", flush=True)

    policy = BabyAIFiLMPolicy.for_babyai(seed=args.seed)
    silent = imit_logger.HierarchicalLogger(sb_logger.Logger(folder=None, output_formats=[]), format_strs=[])
    trainer = bc.BC(observation_space=policy.observation_space, action_space=policy.action_space,
                    rng=np.random.default_rng(args.seed), policy=policy, demonstrations=transitions,
                    batch_size=256, optimizer_kwargs={"lr": 1e-3}, custom_logger=silent)
    n_parameters = sum(p.numel() for p in policy.parameters())
    print(f"policy: BabyAIFiLMPolicy, {n_parameters} parameters; BC batch 256, Adam 1e-3, ent_weight "
          f"{trainer.loss_calculator.ent_weight}, l2_weight {trainer.loss_calculator.l2_weight}", flush=True)
    seeds = list(HELD_OUT_SEEDS[: args.eval_episodes])
    done, train_time = 0, 0.0
    for step in sorted(int(s) for s in args.eval_at.split(",")):
        start = time.perf_counter()
        trainer.train(n_batches=step - done, progress_bar=False, log_interval=10**9)
        train_time += time.perf_counter() - start
        done = step
        start = time.perf_counter()
        rows = []
        for level in levels:
            greedy = evaluate_policy(policy, lambda level=level: make_policy_env(level), seeds)
            sampled = evaluate_policy(policy, lambda level=level: make_policy_env(level), seeds, deterministic=False,
                                      generator=args.seed)
            rows.append(f"{level.removeprefix('BabyAI-').removesuffix('-v0')} {100 * greedy.success_rate:.0f}% greedy"
                        f" / {100 * sampled.success_rate:.0f}% sampled")
        evaluation = time.perf_counter() - start
        print(f"step {step}: " + "; ".join(rows) + f"  (training so far {train_time:.0f} s, "
              f"{step * 256 / train_time:.0f} pairs/s; evaluation {evaluation:.0f} s)", flush=True)
    print(f"total wall time {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main()
