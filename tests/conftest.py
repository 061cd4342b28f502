"""Shared fixtures."""

import sys

import pytest

from curteach_envs import CarTeachEnv


@pytest.fixture(scope="session")
def car_env():
    """The default road (layout_seed=0, gamma=0.99)."""
    return CarTeachEnv(layout_seed=0)


@pytest.fixture(scope="session")
def car_mdp(car_env):
    return car_env.tabular()


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
