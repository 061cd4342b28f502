"""A Minari dataset of continuous-action Pendulum demonstrations from a hand-written controller, made outside curteach.

The controller swings the pendulum up by energy shaping and holds it upright with a PD law: with ``theta`` the angle
from upright and ``E = theta_dot^2 / 2 + 15 (cos theta - 1)`` the energy relative to standing still at the top
(Pendulum-v1's ``theta_ddot = 15 sin theta + 3 u``, so ``dE/dt = 3 u theta_dot``), the torque is
``u = k_E * (-E) * theta_dot`` far from the top, ``-(10 theta + 2 theta_dot)`` within 0.6 rad of it, clipped to the
action space ``[-2, 2]``. A share of the episodes is noisy: every step's torque gets Gaussian noise of standard
deviation 1.5 (before the clip). Each episode's reset seed is stored, so evaluation seeds can avoid them.

    python examples/datasets/scripted_pendulum.py --root DIR --episodes 30
    MINARI_DATASETS_PATH=DIR curteach dataset-bc --dataset pendulum/scripted-v0 --curricula Agn,Cur ...
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Sequence

import gymnasium as gym
import numpy as np

#: within this angle from upright (rad) the PD law holds the pendulum; outside it, energy shaping swings it up
CATCH_ANGLE = 0.6


def controller(obs: np.ndarray) -> np.ndarray:
    """``(1,)`` float32 torque in ``[-2, 2]`` for an observation ``(cos theta, sin theta, theta_dot)``."""
    cos_theta, sin_theta, speed = (float(x) for x in obs)
    theta = np.arctan2(sin_theta, cos_theta)
    if abs(theta) < CATCH_ANGLE:
        torque = -(10.0 * theta + 2.0 * speed)
    else:
        energy = 0.5 * speed**2 + 15.0 * (cos_theta - 1.0)
        torque = 0.5 * -energy * speed
    return np.array([np.clip(torque, -2.0, 2.0)], dtype=np.float32)


def make_dataset(root: str, episodes: int = 30, noisy_share: float = 1 / 3, seed: int = 1000,
                 dataset_id: str = "pendulum/scripted-v0", noisy: Sequence[int] | None = None,
                 horizon: int | None = None) -> None:
    """Write ``episodes`` Pendulum-v1 episodes as the Minari dataset ``dataset_id`` under ``root``: episode ``i``
    from reset seed ``seed + i``; the noisy ones are ``noisy`` (episode indices) or else the first ``noisy_share`` of
    them (their noise drawn from ``default_rng([seed, i])``); ``horizon`` cuts episodes at that many steps (default
    Pendulum's 200; every episode is truncated, Pendulum never terminates)."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    # absolute: Minari 0.5.4 sizes a dataset by joining its folder to paths that already hold it
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(root)
    env = gym.make("Pendulum-v1") if horizon is None else gym.make("Pendulum-v1", max_episode_steps=horizon)
    noisy = set(range(round(noisy_share * episodes)) if noisy is None else noisy)
    buffers = []
    for i in range(episodes):
        rng = np.random.default_rng([seed, i])
        obs, _ = env.reset(seed=seed + i)
        observations, actions, rewards, terms, truncs = [obs], [], [], [], []
        done = False
        while not done:
            action = controller(obs)
            if i in noisy:
                action = np.clip(action + rng.normal(0.0, 1.5, size=1), -2.0, 2.0).astype(np.float32)
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs), actions.append(action), rewards.append(float(reward))
            terms.append(terminated), truncs.append(truncated)
            done = terminated or truncated
        buffers.append(EpisodeBuffer(id=i, seed=seed + i, observations=np.array(observations),
                                     actions=np.array(actions), rewards=rewards, terminations=terms,
                                     truncations=truncs, infos={}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari's notes on optional metadata
        minari.create_dataset_from_buffers(dataset_id, buffers, env=env, author="curteach examples",
                                           author_email="examples@example.org",
                                           code_permalink="examples/datasets/scripted_pendulum.py",
                                           algorithm_name="scripted controller",
                                           description="Pendulum by an energy-shaping controller, a third noisy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the datasets folder (MINARI_DATASETS_PATH)")
    parser.add_argument("--episodes", type=int, default=30)
    args = parser.parse_args()
    make_dataset(args.root, args.episodes)
    print(f"wrote pendulum/scripted-v0 under {args.root}")
