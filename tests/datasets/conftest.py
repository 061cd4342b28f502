"""Fixtures of the datasets tests: every test writes and reads Minari datasets in its own temporary folder."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces


@pytest.fixture(autouse=True)
def minari_root(tmp_path, monkeypatch):
    """``MINARI_DATASETS_PATH`` for the test: a fresh folder (nothing is ever read from or written to ~/.minari)."""
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


#: One observation space per kind the wing supports, with a Discrete action space unless said otherwise.
SPACES = {
    "box": (spaces.Box(-1.0, 1.0, (3,), np.float32), spaces.Box(-2.0, 2.0, (2,), np.float32)),
    "discrete": (spaces.Discrete(11), spaces.Discrete(3)),
    "multidiscrete": (spaces.MultiDiscrete([3, 5]), spaces.MultiDiscrete([2, 4])),
    "image": (spaces.Box(0, 255, (40, 40, 3), np.uint8), spaces.Discrete(4)),
    "text": (spaces.Text(max_length=40), spaces.Discrete(3)),
    "dict": (spaces.Dict({"image": spaces.Box(0, 255, (7, 7, 3), np.uint8), "direction": spaces.Discrete(4),
                          "mission": spaces.Text(max_length=60)}), spaces.Discrete(7)),
}


def _values(space, n, rng):
    if isinstance(space, spaces.Dict):
        from imitation.data.types import DictObs

        return DictObs({k: _values(s, n, rng) for k, s in space.spaces.items()})
    if isinstance(space, spaces.Text):
        words = np.array(["go to", "the red", "ball", "open the door", "pick up a key"], dtype=object)
        out = np.empty(n, dtype=object)
        out[:] = [str(w) for w in rng.choice(words, n)]
        return out
    return np.stack([space.sample() for _ in range(n)]).astype(space.dtype)


def random_pool(kind: str, n_episodes: int = 3, seed: int = 0, group: str = ""):
    """A pool of ``n_episodes`` random episodes (2..5 steps) of ``kind``'s spaces, with seeds, metadata and infos."""
    from imitation.data.types import TrajectoryWithRew

    from curteach_teaching.datasets import EpisodePool

    obs_space, act_space = SPACES[kind]
    obs_space.seed(seed)
    act_space.seed(seed)
    rng = np.random.default_rng(seed)
    trajectories, metadata, infos = [], [], []
    for i in range(n_episodes):
        n = int(rng.integers(2, 6))
        trajectories.append(TrajectoryWithRew(obs=_values(obs_space, n + 1, rng), acts=_values(act_space, n, rng),
                                              infos=None, terminal=bool(i % 2), rews=rng.normal(size=n)))
        metadata.append({"difficulty": float(rng.random()), "level": i, "options": {"task": i}, "tags": [1, 2, i],
                         "name": f"episode {i}", "nested": {"depth": i + 1}})
        infos.append({"success": np.array([False] * n + [True]), "x": rng.normal(size=(n + 1, 2))})
    return EpisodePool.from_trajectories(trajectories, obs_space, act_space, group=group,
                                         seeds=[100 + i if i != 1 else None for i in range(n_episodes)],
                                         metadata=metadata, infos=infos)


@pytest.fixture
def make_pool():
    return random_pool
