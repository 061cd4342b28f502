"""A Minari dataset of continuous-action Pendulum demonstrations from a hand-written controller, made outside curteach.

The controller pumps energy into the pendulum until it nears the top (an energy-shaping law), then holds it upright
with a proportional-derivative law; its torque is clipped to Pendulum's ``[-2, 2]``. A share of the episodes is noisy:
Gaussian noise of standard deviation ``noise`` (default 1.5) is added to every torque before clipping. Every episode
runs Pendulum's 200 steps (the task never terminates); how hard an episode is depends on where the pendulum starts, so
``--task-difficulty return`` (minus the return) ranks a start near the top as easy and a hanging one as hard.

Each episode's reset seed is stored (so evaluation seeds avoid them), and its metadata carries ``noisy`` (true for
the noisy ones), so ``curteach dataset-bc --bad-field noisy`` reports how much of the noisy data a cell kept.

    python examples/datasets/scripted_pendulum.py --root DIR --episodes 60
    MINARI_DATASETS_PATH=DIR curteach dataset-bc --dataset pendulum/scripted-v0 ...
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Sequence

import gymnasium as gym
import numpy as np

#: Pendulum-v1's angular acceleration is ``15 sin(theta) + 3 u`` (g = 10, m = l = 1); with the energy
#: ``E = w^2 / 2 + 15 cos(theta)`` that gives ``dE/dt = 3 u w``, and the upright pendulum at rest has ``E = 15``.
UPRIGHT_ENERGY = 15.0


def controller(obs: np.ndarray) -> np.ndarray:
    """``(3,)`` observation ``(cos theta, sin theta, w)`` -> ``(1,)`` float32 torque in ``[-2, 2]``."""
    cos, sin, w = (float(v) for v in obs)
    theta = np.arctan2(sin, cos)
    if cos > 0.85:  # near the top: hold it there
        torque = -(10.0 * theta + 2.0 * w)
    else:  # pump energy: the torque's sign follows w while the energy is short of the top's
        energy = 0.5 * w * w + UPRIGHT_ENERGY * cos
        torque = 0.5 * (UPRIGHT_ENERGY - energy) * w if abs(w) > 1e-3 else 1.0
    return np.clip(np.array([torque], dtype=np.float32), -2.0, 2.0)


def make_dataset(root: str, episodes: int = 60, noisy_share: float = 1 / 3, noise: float = 1.5, seed: int = 1000,
                 dataset_id: str = "pendulum/scripted-v0", noisy: Sequence[int] | None = None,
                 horizon: int | None = None) -> None:
    """Write ``episodes`` Pendulum episodes as the Minari dataset ``dataset_id`` under ``root``: episode ``i`` from
    reset seed ``seed + i``; the noisy ones are ``noisy`` (episode indices) or else every episode whose index is a
    multiple of ``round(1 / noisy_share)`` (spread over the pool), their torques perturbed by ``N(0, noise^2)`` drawn
    from a generator seeded by the episode's reset seed; ``horizon`` cuts episodes at that many steps (truncated;
    default Pendulum's 200)."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    # absolute: Minari 0.5.4 sizes a dataset by joining its folder to paths that already hold it
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(root)
    env = gym.make("Pendulum-v1") if horizon is None else gym.make("Pendulum-v1", max_episode_steps=horizon)
    if noisy is None:
        every = max(1, round(1 / noisy_share)) if noisy_share > 0 else 0
        noisy = range(0, episodes, every) if every else ()
    noisy = set(noisy)
    buffers = []
    for i in range(episodes):
        rng = np.random.default_rng(seed + i)
        obs, _ = env.reset(seed=seed + i)
        observations, actions, rewards, terms, truncs = [obs], [], [], [], []
        done = False
        while not done:
            action = controller(obs)
            if i in noisy:
                action = np.clip(action + rng.normal(0.0, noise, 1).astype(np.float32), -2.0, 2.0)
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs), actions.append(action), rewards.append(reward)
            terms.append(terminated), truncs.append(truncated)
            done = terminated or truncated
        buffers.append(EpisodeBuffer(id=i, seed=seed + i, observations=np.array(observations),
                                     actions=np.array(actions), rewards=rewards, terminations=terms,
                                     truncations=truncs, infos={}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari's notes on optional metadata
        dataset = minari.create_dataset_from_buffers(
            dataset_id, buffers, env=env, author="curteach examples", author_email="examples@example.org",
            code_permalink="examples/datasets/scripted_pendulum.py", algorithm_name="scripted controller",
            description=f"Pendulum by an energy-shaping controller, {len(noisy)} of {episodes} episodes noisy")
    dataset.storage.update_episode_metadata([{"noisy": i in noisy} for i in range(episodes)], range(episodes))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the datasets folder (MINARI_DATASETS_PATH)")
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--noise", type=float, default=1.5, help="torque noise of the noisy episodes (default 1.5)")
    args = parser.parse_args()
    make_dataset(args.root, args.episodes, noise=args.noise)
    print(f"wrote pendulum/scripted-v0 under {args.root}")
