"""A Minari dataset of CartPole demonstrations from a hand-written controller, made outside curteach.

The controller pushes the cart toward the side the pole leans to (angle plus half its angular velocity); a share of
the episodes is noisy (every third action flipped): the first third of them by default (episodes 0-9 of 30). Each
episode's reset seed is stored, so evaluation seeds can avoid them.

No metadata field marks the noisy episodes (an episode records only Minari's ``id``, ``seed`` and ``total_steps``),
so ``curteach dataset-bc --bad-field noisy`` is refused on this dataset and no other field can stand in;
``scripted_pendulum.py`` records ``noisy``. (The dataset stays as it is: committed results were made from it.)

    python examples/datasets/scripted_cartpole.py --root DIR --episodes 30
    MINARI_DATASETS_PATH=DIR curteach dataset-bc --dataset cartpole/scripted-v0 ...
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Sequence

import gymnasium as gym
import numpy as np


def controller(obs: np.ndarray) -> int:
    """Push toward the pole's lean."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def make_dataset(root: str, episodes: int = 30, noisy_share: float = 1 / 3, seed: int = 1000,
                 dataset_id: str = "cartpole/scripted-v0", noisy: Sequence[int] | None = None,
                 horizon: int | None = None) -> None:
    """Write ``episodes`` CartPole episodes as the Minari dataset ``dataset_id`` under ``root``: episode ``i`` from
    reset seed ``seed + i``; the noisy ones are ``noisy`` (episode indices) or else the first ``noisy_share`` of
    them; ``horizon`` cuts episodes at that many steps (truncated; default CartPole's 500)."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    # absolute: Minari 0.5.4 sizes a dataset by joining its folder to paths that already hold it, which only an
    # absolute folder survives (a relative --root failed with FileNotFoundError)
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(root)
    env = gym.make("CartPole-v1") if horizon is None else gym.make("CartPole-v1", max_episode_steps=horizon)
    noisy = set(range(round(noisy_share * episodes)) if noisy is None else noisy)
    buffers = []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        observations, actions, rewards, terms, truncs = [obs], [], [], [], []
        done = False
        while not done:
            action = controller(obs)
            if i in noisy and len(actions) % 3 == 0:
                action = 1 - action
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs), actions.append(action), rewards.append(reward)
            terms.append(terminated), truncs.append(truncated)
            done = terminated or truncated
        buffers.append(EpisodeBuffer(id=i, seed=seed + i, observations=np.array(observations),
                                     actions=np.array(actions), rewards=rewards, terminations=terms,
                                     truncations=truncs, infos={}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari's notes on optional metadata
        minari.create_dataset_from_buffers(dataset_id, buffers, env=env, author="curteach examples",
                                           author_email="examples@example.org",
                                           code_permalink="examples/datasets/scripted_cartpole.py",
                                           algorithm_name="scripted controller",
                                           description="CartPole by a hand-written controller, a third noisy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the datasets folder (MINARI_DATASETS_PATH)")
    parser.add_argument("--episodes", type=int, default=30)
    args = parser.parse_args()
    make_dataset(args.root, args.episodes)
    print(f"wrote cartpole/scripted-v0 under {args.root}")
