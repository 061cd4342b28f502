"""The pilot behind the diffusion learner's defaults (docs/learners-diffusion.md): on the scripted Pendulum data,
train a :class:`~curteach_teaching.learners.diffusion.DiffusionLearner` per setting on the first episodes, and print
the held-out score (minus the denoising loss over the learner's K pairs, on the last episodes) and the greedy return
of 10 Pendulum episodes.

    python examples/datasets/scripted_pendulum.py --root DIR --episodes 40
    python benchmarks/diffusion_pilot.py --dataset DIR/pendulum/scripted-v0 --steps 3000

The greedy rollouts step Pendulum here, with the learner's ``act``: ``curteach_teaching.rollouts`` acts through the
SB3 action seam, not a dataset learner.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from curteach_teaching.datasets import read_pool
from curteach_teaching.learners.diffusion import DiffusionLearner

SETTINGS = {
    "default": dict(learning_rate=3e-3),
    "lr 1e-3": dict(learning_rate=1e-3),
    "128x2": dict(learning_rate=3e-3, hidden_sizes=(128, 128)),
}


def greedy_returns(learner: DiffusionLearner, seeds: list[int], ddim_steps: int | None = None) -> np.ndarray:
    """``(E,)`` the return of one greedy Pendulum-v1 episode per seed, the episodes acted on as one batch."""
    if ddim_steps is not None:
        learner.sampler.set_timesteps(ddim_steps)
    envs = [gym.make("Pendulum-v1") for _ in seeds]
    obs = np.stack([env.reset(seed=seed)[0] for env, seed in zip(envs, seeds, strict=True)])
    returns, done = np.zeros(len(seeds)), np.zeros(len(seeds), bool)
    while not done.all():
        actions = np.clip(learner.act(obs), -2.0, 2.0)
        for i, env in enumerate(envs):
            if done[i]:
                continue
            obs[i], reward, terminated, truncated, _ = env.step(actions[i].astype(np.float32))
            returns[i] += reward
            done[i] = terminated or truncated
    if ddim_steps is not None:
        learner.sampler.set_timesteps(learner.ddim_steps)
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--held-out", type=int, default=8, help="the last episodes, scored and never trained on")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    args = parser.parse_args()
    pool = read_pool(args.dataset)
    train, held = pool.trajectories[:-args.held_out], pool.trajectories[-args.held_out:]
    obs = np.concatenate([t.obs[:-1] for t in train]).astype(np.float32)
    acts = np.concatenate([t.acts for t in train]).astype(np.float32)
    held_obs = np.concatenate([t.obs[:-1] for t in held]).astype(np.float32)
    held_acts = np.concatenate([t.acts for t in held]).astype(np.float32)
    seeds = list(range(10_000, 10_010))
    for name in args.settings.split(","):
        options = SETTINGS[name]
        learner = DiffusionLearner(pool.observation_space, pool.action_space, seed=0, device="cpu", batch_size=256,
                                   rng=None, **options)
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for _ in range(args.steps):
            batch = rng.integers(0, len(acts), 256)
            learner.train_step(obs[batch], acts[batch], None)
        seconds = time.perf_counter() - start
        row = {"setting": name, "steps": args.steps, "train_s": round(seconds, 1),
               "held_out_score": float(learner.log_likelihood(held_obs, held_acts).mean()),
               "train_score": float(learner.log_likelihood(obs[:2000], acts[:2000]).mean())}
        for steps in (10, 5):
            row[f"greedy_return_ddim{steps}"] = float(greedy_returns(learner, seeds, steps).mean())
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
