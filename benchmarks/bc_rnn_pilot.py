"""The pilot behind the bc-rnn learner's defaults (docs/learners-bc-rnn.md): on the scripted Pendulum data, train a
:class:`~curteach_teaching.learners.bc_rnn.BCRNNLearner` per setting (and the Gaussian MLP ``--policy auto`` trains,
for comparison) on the first episodes, and print the held-out per-step log-likelihood (on the last episodes) and the
mean greedy return of 10 Pendulum-v1 episodes through the library's evaluator, once per way of acting
(``--acting``: the bc-rnn learner's :data:`~curteach_teaching.learners.bc_rnn.ACTING`; the same trained weights).

    python examples/datasets/scripted_pendulum.py --root DIR --episodes 40
    python benchmarks/bc_rnn_pilot.py --dataset DIR/pendulum/scripted-v0 --steps 2000

Both learners see the same uniformly drawn batches of 256 steps (a generator seeded by 0), each window of the
recurrent learner ending at the step the MLP trains on (its loss on that step's action, or, with
``loss="sequence"``, on the action of every step of the window).
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from curteach_teaching.datasets import read_pool
from curteach_teaching.learners.dataset_learner import make_learner
from curteach_teaching.learners.windows import (
    episode_windows,
    learner_sequences,
    learner_window,
    sequence_batch,
    windowed,
)
from curteach_teaching.rollouts import evaluate_policy

#: name -> (--policy, the learner's keyword arguments beyond the kind's, Adam's rate)
SETTINGS = {
    "mlp": ("auto", {}, 1e-3),
    "rnn-64 1e-3": ("bc-rnn", dict(hidden_size=64), 1e-3),
    "rnn-64 std-0.05 1e-3": ("bc-rnn", dict(hidden_size=64, min_std=0.05), 1e-3),
    "rnn-64 std-1e-4 1e-3": ("bc-rnn", dict(hidden_size=64, min_std=1e-4), 1e-3),
    "rnn-64 last std-1e-4 1e-3": ("bc-rnn", dict(hidden_size=64, loss="last", min_std=1e-4), 1e-3),
    "rnn-128 1e-3": ("bc-rnn", dict(hidden_size=128), 1e-3),
    "rnn-64 3e-3": ("bc-rnn", dict(hidden_size=64), 3e-3),
    "rnn-400 1e-3": ("bc-rnn", dict(hidden_size=400), 1e-3),
}


def build(name: str, pool) -> object:
    """A fresh learner of setting ``name``, seed 0, on the CPU."""
    policy, options, rate = SETTINGS[name]
    if not options:
        return make_learner(policy, pool.observation_space, pool.action_space, seed=0, device="cpu",
                            batch_size=256, learning_rate=rate, rng=np.random.default_rng(0))
    from curteach_teaching.learners.bc_rnn import BCRNNLearner

    return BCRNNLearner(pool.observation_space, pool.action_space, seed=0, learning_rate=rate, **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--held-out", type=int, default=8, help="the last episodes, scored and never trained on")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--acting", default="window,carried,horizon",
                        help="comma-separated ways a bc-rnn learner acts, each evaluated (default all three)")
    args = parser.parse_args()
    pool = read_pool(args.dataset)
    train, held = pool.trajectories[:-args.held_out], pool.trajectories[-args.held_out:]
    obs = np.concatenate([t.obs[:-1] for t in train]).astype(np.float32)
    acts = np.concatenate([t.acts for t in train]).astype(np.float32)
    held_obs = np.concatenate([t.obs[:-1] for t in held]).astype(np.float32)
    held_acts = np.concatenate([t.acts for t in held]).astype(np.float32)
    seeds = list(range(10_000, 10_010))
    for name in args.settings.split(","):
        learner = build(name, pool)
        window = learner_window(learner)
        rows = episode_windows([len(t.acts) for t in train], window)
        held_rows = episode_windows([len(t.acts) for t in held], window)

        def steps(observations, index, windows, window=window):
            return observations[index] if window == 1 else windowed(observations, windows[index])

        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for _ in range(args.steps):
            batch = rng.integers(0, len(acts), 256)
            targets = sequence_batch(acts, None, rows[batch])[0] if learner_sequences(learner) else acts[batch]
            learner.train_step(steps(obs, batch, rows), targets, None)
        seconds = time.perf_counter() - start
        held_index = np.arange(len(held_acts))
        returns = {}
        for acting in args.acting.split(",") if hasattr(learner, "acting") else ["-"]:
            if acting != "-":
                learner.acting = acting
            returns[acting] = float(evaluate_policy(learner, lambda: gym.make("Pendulum-v1"), seeds).returns.mean())
        print(json.dumps({
            "setting": name, "steps": args.steps, "train_s": round(seconds, 1),
            "held_out_log_likelihood": float(np.mean(learner.log_likelihood(steps(held_obs, held_index, held_rows),
                                                                            held_acts))),
            "greedy_return": returns}), flush=True)


if __name__ == "__main__":
    main()
