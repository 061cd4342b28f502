"""Shared fixtures.

The tests are grouped like the packages (``envs/``, ``bases/``, ``learners/``, ``teaching/``, ``curriculum/``,
``datasets/``, ``sweeps/``, ``experiments/``, ``commands/``, ``project/``), in folders without ``__init__.py``,
under pytest's default import mode (``prepend``). That is the simplest layout: no setting, no test packages; each
test module is imported by its basename, so basenames stay unique across the folders (pytest refuses a duplicate at
collection). A fixture used by one group lives in that folder's ``conftest.py``; one used across groups lives here.
A test module never imports another (``project/test_test_modules.py`` checks): what two modules share is a fixture.

This file is also loaded when the environment tests run without the teaching stack (``project/test_dist_envs.py``):
it imports ``curteach_teaching`` only inside fixtures.
"""

import functools
import sys

import numpy as np
import pytest

from curteach_envs import CarTeachEnv


@pytest.fixture(scope="session")
def car_env():
    """The default road (layout_seed=0, gamma=0.99)."""
    return CarTeachEnv(layout_seed=0)


@pytest.fixture(scope="session")
def car_mdp(car_env):
    return car_env.tabular()


class CarRoad:
    """One road of CarTeach-v0 (``layout_seed``, gamma 0.99) as a tabular MDP, and its expert (hard value
    iteration); the demonstration pool and the expert's per-start occupancy are computed when first read."""

    def __init__(self, layout_seed: int):
        from curteach_teaching.planning import hard_value_iteration

        self.mdp = CarTeachEnv(layout_seed=layout_seed).tabular()
        self.expert = hard_value_iteration(self.mdp)

    @functools.cached_property
    def pool(self):
        """The expert's demonstrations, sampled with ``default_rng(0)`` (the default count per start)."""
        from curteach_teaching.demonstrations import sample_demonstrations

        return sample_demonstrations(self.mdp, self.expert.policy, np.random.default_rng(0))

    @functools.cached_property
    def expert_rho(self):
        """The expert's state occupancy per start state."""
        from curteach_teaching.demonstrations import occupancy_per_start

        return occupancy_per_start(self.mdp, self.expert.policy)


@pytest.fixture(scope="module")
def car_road():
    """``car_road(layout_seed) -> CarRoad``: built once per test module and layout seed."""
    return functools.cache(CarRoad)


@pytest.fixture
def fake_distribution(tmp_path, monkeypatch):
    """``install(package, files, entry_points)``: write ``files`` (``{relative path: source}``) under ``tmp_path``
    and a distribution ``package`` 1.0 declaring ``entry_points`` (the text of ``entry_points.txt``), found through
    ``sys.path`` as an installed one would be; its modules are forgotten after the test."""
    installed = []

    def install(package: str, files: dict, entry_points: str):
        for name, source in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(source)
        info = tmp_path / f"{package}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(entry_points)
        installed.append(package)
        return tmp_path

    monkeypatch.syspath_prepend(str(tmp_path))
    yield install
    for name in [m for m in sys.modules for package in installed if m == package or m.startswith(package + ".")]:
        sys.modules.pop(name, None)
