"""Issue 39, item 8: BC on the continuous-action example (``examples/datasets/scripted_pendulum.py``) reaches the
data's return within a stated margin.

The example's dataset as its script writes it by default (60 Pendulum-v1 episodes of the energy-shaping controller,
every third with torque noise of standard deviation 1.5); imitation's ``BC`` trains the policy factory's Gaussian MLP
(``policy="auto"``) on all of it, 3,000 steps of 256 transitions at Adam's 1e-3 (the settings of the docs page's
Pendulum sweep), and the greedy policy (the Gaussian's mean) plays 20 held-out starts (reset seeds 10,000-10,019,
none of the data's 1,000-1,059) through the shared evaluator. The same 20 starts are played by the controller itself.

The margin is measured, not tuned: over training seeds 0-9 (``MEASURED_GAPS``: the controller's mean return on the
20 starts, -121.7, minus BC's, on the 2-core development machine) BC came within 12-18 of the controller in 8 of the
10 seeds (a greedy return of -133.5 to -140.1, better than the data's own mean return, -196.7, which its noisy
episodes pull down); seeds 0 and 7 fell 109 and 139 short (-230.3 and -260.4: on some starts the policy lets the
pendulum fall from the top). The test trains seed 1 and allows ``MARGIN`` = 150 below the controller, which every
measured seed met; against the data's mean return the same margin is looser still. Run time: about 10 s of CPU.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "datasets"
HELD_OUT = tuple(range(10_000, 10_020))
STEPS, BATCH, LEARNING_RATE, SEED = 3000, 256, 1e-3, 1
#: controller minus BC, mean greedy return on HELD_OUT after STEPS, training seeds 0..9 (see the module docstring)
MEASURED_GAPS = (108.6, 11.9, 12.4, 12.4, 18.0, 11.8, 18.0, 138.7, 18.3, 18.4)
MARGIN = 150.0


def _controller_returns(make_env, controller) -> np.ndarray:
    returns = []
    for seed in HELD_OUT:
        env = make_env()
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(controller(obs))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    return np.array(returns)


def measure(root: Path, seed: int = SEED, train_on: list[int] | None = None) -> dict:
    """Write the example's dataset under ``root`` (if not there), train BC with ``seed`` (the policy's weights and
    the batches) on its episodes ``train_on`` (default all), and return the mean greedy returns on
    :data:`HELD_OUT`: ``before`` and ``after`` training, the controller's (``expert``), and the data's mean return
    (``data``)."""
    import gymnasium as gym
    import minari
    import torch as th
    from imitation.data import types

    from curteach_teaching.curriculum.adapters.bc import CurriculumBC
    from curteach_teaching.learners.factory import make_bc_trainer, make_policy
    from curteach_teaching.rollouts import evaluate_policy

    sys.path.insert(0, str(EXAMPLES))
    try:
        from scripted_pendulum import controller, make_dataset
    finally:
        sys.path.remove(str(EXAMPLES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not (root / "pendulum" / "scripted-v0").is_dir():
            make_dataset(str(root))  # the script's defaults: 60 episodes from reset seeds 1000..1059
        os.environ["MINARI_DATASETS_PATH"] = str(root)
        episodes = list(minari.load_dataset("pendulum/scripted-v0").iterate_episodes())
    assert len(episodes) == 60 and not {int(e.id) + 1000 for e in episodes} & set(HELD_OUT)

    def make_env():
        return gym.make("Pendulum-v1")

    env = make_env()
    threads = th.get_num_threads()
    th.set_num_threads(1)  # the measured gaps were on one thread
    try:
        policy = make_policy("auto", env.observation_space, env.action_space, seed)
        trainer = make_bc_trainer(policy, env.observation_space, env.action_space, batch_size=BATCH,
                                  learning_rate=LEARNING_RATE, rng=np.random.default_rng(seed))
        demos = [types.Trajectory(obs=e.observations, acts=e.actions, infos=None, terminal=False)
                 for i, e in enumerate(episodes) if train_on is None or i in train_on]
        # Agn through the library's step (its own generator of batches: imitation's data loader would shuffle with
        # torch's global generator): one epoch of STEPS steps over the whole pool
        curriculum = CurriculumBC(trainer, demos, variant="Agn", rng=np.random.default_rng(seed), log=False,
                                  steps_per_epoch=STEPS)
        before = evaluate_policy(policy, make_env, HELD_OUT).returns.mean()
        curriculum.train(1)
        after = evaluate_policy(policy, make_env, HELD_OUT).returns.mean()
    finally:
        th.set_num_threads(threads)
    return {"before": float(before), "after": float(after),
            "expert": float(_controller_returns(make_env, controller).mean()),
            "data": float(np.mean([e.rewards.sum() for e in episodes]))}


@pytest.mark.slow
def test_bc_on_the_pendulum_example_reaches_the_controllers_return_within_the_margin(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    got = measure(tmp_path)
    assert got["before"] < got["expert"] - 500  # the fresh policy does not swing the pendulum up: something to learn
    assert max(MEASURED_GAPS) < MARGIN  # the margin holds every measured seed
    assert got["after"] >= got["expert"] - MARGIN, got
    assert got["after"] >= got["data"] - MARGIN, got  # the data's own mean return, its noisy episodes in it
