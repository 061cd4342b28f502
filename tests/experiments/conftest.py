"""Fixtures of the experiments tests: a Minari dataset made outside the package (a scripted CartPole controller,
some of its episodes noisy), written once per module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

#: where the example that writes the dataset lives
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "datasets"
#: the id of the scripted CartPole dataset
DATASET = "test/cartpole-scripted-v0"


def scripted_cartpole(root, n_episodes=6, seed0=100, noisy=(), horizon=120, dataset=DATASET):
    """The example's dataset of a hand-written CartPole controller (``examples/datasets/scripted_cartpole.py``):
    ``n_episodes`` from reset seeds ``seed0, seed0 + 1, ...``, the ``noisy`` ones taking the opposite action every
    third step, cut at ``horizon`` steps (truncated)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from scripted_cartpole import make_dataset
    finally:
        sys.path.remove(str(EXAMPLES))
    make_dataset(str(root), episodes=n_episodes, seed=seed0, dataset_id=dataset, noisy=noisy, horizon=horizon)


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


#: the id of the scripted Pendulum dataset (continuous actions) and its noisy episodes
PENDULUM = "test/pendulum-scripted-v0"
PENDULUM_NOISY = (0, 1, 2, 3)


def scripted_pendulum(root, n_episodes=12, seed0=100, noisy=PENDULUM_NOISY, horizon=60, dataset=PENDULUM):
    """The example's dataset of an energy-shaping Pendulum controller (``examples/datasets/scripted_pendulum.py``):
    ``n_episodes`` from reset seeds ``seed0, seed0 + 1, ...``, the ``noisy`` ones with Gaussian torque noise, cut at
    ``horizon`` steps."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from scripted_pendulum import make_dataset
    finally:
        sys.path.remove(str(EXAMPLES))
    make_dataset(str(root), episodes=n_episodes, seed=seed0, dataset_id=dataset, noisy=noisy, horizon=horizon)


@pytest.fixture(scope="module")
def pendulum_root(tmp_path_factory):
    """A continuous-action Minari dataset made outside the package: 12 scripted Pendulum episodes of 60 steps."""
    import warnings

    root = tmp_path_factory.mktemp("minari-pendulum")
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        scripted_pendulum(root)
    return root
