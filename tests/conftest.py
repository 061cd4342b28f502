"""Shared fixtures."""

import pytest

from curteach_envs import CarTeachEnv


@pytest.fixture(scope="session")
def car_env():
    """The default road (layout_seed=0, gamma=0.99)."""
    return CarTeachEnv(layout_seed=0)


@pytest.fixture(scope="session")
def car_mdp(car_env):
    return car_env.tabular()
