"""Speed of BabyAI dataset generation and of the vectorised evaluator.

Usage: ``python benchmarks/babyai_generation.py [--episodes 400] [--eval-episodes 100] [--train-steps 300]
[--levels ...]``.

Prints, per level: bot episodes per second with 1 and with 2 worker processes (``generate_bot_episodes``; the
2-worker figure includes starting the processes), and Minari writing and reading per second (HDF5). Then episodes
per second of :func:`~curteach_teaching.rollouts.evaluate_policy` against Gymnasium's
``SyncVectorEnv`` stepping the same number of envs with the same policy, greedy actions, for two policies:

* untrained: every episode runs to its step limit, so both step every env at every step;
* briefly trained: BC (imitation's, batches of 256) for ``--train-steps`` steps on the bot episodes just generated,
  every level together. Its episodes end at different times (the successes early, the failures at the step limit),
  and a vector env keeps stepping (and auto-resetting) the envs whose episode has ended until the last one ends,
  while ``evaluate_policy`` stops stepping them: the env steps each takes are printed beside the rates.

The ratios are against the baseline measured in the same run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch


def _sync_vector_env_rate(policy, level: str, seeds: list[int]) -> tuple[float, int]:
    """Episodes/s of a plain SyncVectorEnv loop, and the env steps it took: every env steps until its first episode
    ends (later ones ignored); the policy runs on all envs at every step, as a vector env requires."""
    import gymnasium as gym

    from curteach_teaching.datasets.sources.babyai_bot import make_policy_env
    from curteach_teaching.learners.actions import action_distribution, greedy_actions

    start = time.perf_counter()
    envs = gym.vector.SyncVectorEnv([lambda: make_policy_env(level) for _ in seeds])
    observations, _ = envs.reset(seed=seeds)
    finished = np.zeros(len(seeds), dtype=bool)
    steps = 0
    while not finished.all():
        actions = greedy_actions(action_distribution(policy, observations))
        observations, _, terminated, truncated, _ = envs.step(actions)
        finished |= terminated | truncated
        steps += len(seeds)
    envs.close()
    return len(seeds) / (time.perf_counter() - start), steps


def _train_bc(trajectories: list, steps: int, seed: int):
    """The FiLM policy after ``steps`` steps of imitation's BC (batches of 256, Adam 1e-3) on ``trajectories``."""
    from imitation.algorithms import bc
    from imitation.data import rollout

    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy
    from curteach_teaching.learners.quiet_logger import silent_logger

    policy = BabyAIFiLMPolicy.for_babyai(seed=seed)
    trainer = bc.BC(observation_space=policy.observation_space, action_space=policy.action_space,
                    rng=np.random.default_rng(seed), policy=policy,
                    demonstrations=rollout.flatten_trajectories(trajectories), batch_size=256,
                    optimizer_kwargs={"lr": 1e-3}, custom_logger=silent_logger())
    with warnings.catch_warnings():
        # imitation's BC calls float() on tensors that require grad, and unwraps plain dicts of Dict batches
        warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
        warnings.filterwarnings("ignore", message="trying to unwrap object of type")
        trainer.train(n_batches=steps, progress_bar=False, log_interval=10**9)
    return policy


def _compare_evaluators(policy, levels: list[str], seeds: list[int], label: str) -> None:
    """Print, per level, evaluate_policy's episodes/s against SyncVectorEnv's with ``policy``, greedy actions."""
    from curteach_teaching.datasets.sources.babyai_bot import make_policy_env
    from curteach_teaching.rollouts import evaluate_policy

    for level in levels:
        start = time.perf_counter()
        results = evaluate_policy(policy, lambda level=level: make_policy_env(level), seeds)
        ours = len(seeds) / (time.perf_counter() - start)
        theirs, their_steps = _sync_vector_env_rate(policy, level, seeds)
        print(f"{level:28s} {label} policy, {len(seeds)} greedy episodes (success {results.success_rate:.0%}, "
              f"length {results.lengths.mean():.0f} mean, {results.lengths.min()}-{results.lengths.max()}): "
              f"evaluate_policy {ours:6.1f} episodes/s ({results.lengths.sum()} env steps), SyncVectorEnv "
              f"{theirs:6.1f} episodes/s ({their_steps} env steps); ratio {ours / theirs:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=400, help="bot episodes per level (default 400)")
    parser.add_argument("--eval-episodes", type=int, default=100, help="evaluation episodes (default 100)")
    parser.add_argument("--levels", default="GoToRedBallGrey,GoToLocal,PickupLoc,PutNextLocal")
    parser.add_argument("--train-steps", type=int, default=300,
                        help="BC steps of the trained policy, on the generated episodes (default 300)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from curteach_teaching.datasets import read_pool, write_pool
    from curteach_teaching.datasets.codecs import codec_for
    from curteach_teaching.datasets.sources.babyai import bot_pool, dataset_id
    from curteach_teaching.datasets.sources.babyai_bot import generate_bot_episodes, plan_episodes, resolve_levels
    from curteach_teaching.datasets.sources.base import HELD_OUT_SEEDS
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    levels = resolve_levels(args.levels)
    root = Path(tempfile.mkdtemp(prefix="babyai-generation-"))
    trajectories = []
    try:
        for level in levels:
            plans = plan_episodes([level], args.episodes, seed=0)
            rates = {}
            for workers in (1, 2):
                start = time.perf_counter()
                episodes = generate_bot_episodes(plans, workers=workers, progress=False)
                rates[workers] = len(plans) / (time.perf_counter() - start)
            start = time.perf_counter()
            path = write_pool(bot_pool(level, episodes), dataset_id(level), root=root, data_format="hdf5")
            write_rate = len(plans) / (time.perf_counter() - start)
            start = time.perf_counter()
            pool = read_pool(path)
            trajectories += codec_for(pool.observation_space).trajectories(pool.trajectories)
            read_rate = len(plans) / (time.perf_counter() - start)
            print(f"{level:28s} bot episodes/s: {rates[1]:6.0f} (1 worker) {rates[2]:6.0f} (2 workers); "
                  f"Minari HDF5 write {write_rate:5.0f}/s, read as trajectories {read_rate:5.0f}/s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    seeds = list(HELD_OUT_SEEDS[: args.eval_episodes])
    _compare_evaluators(BabyAIFiLMPolicy.for_babyai(seed=0), levels, seeds, "untrained")
    start = time.perf_counter()
    trained = _train_bc(trajectories, args.train_steps, seed=0)
    print(f"BC: {args.train_steps} steps of 256 on {len(trajectories)} bot episodes in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    _compare_evaluators(trained, levels, seeds, "trained")

if __name__ == "__main__":
    main()
