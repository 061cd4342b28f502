"""Fixtures of the experiments tests: a Minari dataset made outside the package (a scripted CartPole controller,
some of its episodes noisy), written once per module."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

#: the id of the scripted CartPole dataset
DATASET = "test/cartpole-scripted-v0"


def scripted_cartpole(root, n_episodes=6, seed0=100, noisy=(), horizon=120, dataset=DATASET):
    """A Minari dataset of a hand-written CartPole controller (push toward the pole's lean), ``noisy`` episodes
    taking the opposite action every third step; episodes cut at ``horizon`` steps (truncated)."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env = gym.make("CartPole-v1", max_episode_steps=horizon)
    buffers = []
    for i in range(n_episodes):
        obs, _ = env.reset(seed=seed0 + i)
        observations, actions, rewards, terms, truncs = [obs], [], [], [], []
        done = False
        while not done:
            action = int(obs[2] + 0.5 * obs[3] > 0)
            if i in noisy and len(actions) % 3 == 0:
                action = 1 - action
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs), actions.append(action), rewards.append(reward)
            terms.append(terminated), truncs.append(truncated)
            done = terminated or truncated
        buffers.append(EpisodeBuffer(id=i, seed=seed0 + i, observations=np.array(observations),
                                     actions=np.array(actions), rewards=rewards, terminations=terms,
                                     truncations=truncs, infos={}))
    minari.create_dataset_from_buffers(dataset, buffers, env=env, author="tests", author_email="tests@example.org",
                                       code_permalink="tests/experiments/test_dataset_bc.py",
                                       algorithm_name="scripted", description="scripted CartPole")


@pytest.fixture(scope="module")
def cartpole_root(tmp_path_factory):
    import warnings

    root = tmp_path_factory.mktemp("minari")
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari's notes on the dataset's metadata
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        scripted_cartpole(root, noisy=(4, 5))
    return root


#: the mixed-quality dataset's id and its noisy episodes (a third of them)
MIXED = "test/cartpole-mixed-v0"
MIXED_NOISY = (2, 5, 8, 11)


@pytest.fixture(scope="module")
def mixed_root(tmp_path_factory):
    """A mixed-quality dataset: 12 scripted CartPole episodes, those of :data:`MIXED_NOISY` noisy."""
    import warnings

    root = tmp_path_factory.mktemp("minari-mixed")
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        scripted_cartpole(root, n_episodes=12, noisy=MIXED_NOISY, horizon=60, dataset=MIXED)
    return root
