"""``--env`` ids as ``gym.make`` users expect them (issue 43, item 5): an id of an installed package that registers its
environments on import (``BabyAI-GoToObj-v0``) works without the ``minigrid:`` prefix; an unknown id is one line
naming it and the ``module:Id`` form."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import pytest

from curteach_teaching.datasets import env_ids
from curteach_teaching.datasets.env_ids import check_env_id


@pytest.fixture
def lazy_package(tmp_path, monkeypatch):
    """A package ``lazy_registering_pkg`` whose import registers ``LazyTeach-v0`` (CartPole's entry point), made the
    only one :func:`check_env_id` may import; the id and the module are forgotten after the test."""
    (tmp_path / "lazy_registering_pkg.py").write_text(
        "from gymnasium.envs.registration import register\n"
        "register(id='LazyTeach-v0', entry_point='gymnasium.envs.classic_control.cartpole:CartPoleEnv')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(env_ids, "REGISTERING_PACKAGES", ("no_such_package_here", "lazy_registering_pkg"))
    yield "LazyTeach-v0"
    gym.registry.pop("LazyTeach-v0", None)
    sys.modules.pop("lazy_registering_pkg", None)


def test_an_id_registered_on_import_is_found(lazy_package):
    assert "lazy_registering_pkg" not in sys.modules and lazy_package not in gym.registry
    assert check_env_id(lazy_package).id == lazy_package  # imported only now, then found
    assert "lazy_registering_pkg" in sys.modules


def test_an_unknown_id_is_one_line(lazy_package):
    with pytest.raises(ValueError) as refused:
        check_env_id("NoSuchTeach-v0")
    message = str(refused.value)  # gymnasium's own words in between (it may suggest a close name)
    assert message.startswith("no environment 'NoSuchTeach-v0' is registered, also after importing "
                              "lazy_registering_pkg (Environment `NoSuchTeach` doesn't exist.")
    assert message.endswith("); an id of another package is written module:Id, e.g. my_package:MyEnv-v0")
    assert "\n" not in message
    with pytest.raises(ValueError, match=r"^environment 'no_such_module_x:A-v0': cannot import 'no_such_module_x'"):
        check_env_id("no_such_module_x:A-v0")
    with pytest.raises(ValueError, match=r"^no environment 'NoSuchTeach-v0' in 'lazy_registering_pkg': "):
        check_env_id("lazy_registering_pkg:NoSuchTeach-v0")
    with pytest.raises(ValueError, match="non-empty string"):
        check_env_id(" ")


@pytest.mark.parametrize("env_id", ["BabyAI-GoToObj-v0", "minigrid:BabyAI-GoToObj-v0"])
def test_dataset_bc_finds_babyai_ids_in_a_fresh_process(cartpole_dataset, tmp_path, env_id):
    # a fresh interpreter: nothing has imported minigrid; before, the plain id was gymnasium's NameNotFound
    pytest.importorskip("minigrid")
    root, dataset = cartpole_dataset
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "curteach_teaching.cli", "dataset-bc", "--dataset", dataset, "--env",
                           env_id, "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MINARI_DATASETS_PATH": str(root)})
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    # the environment was made: its spaces are compared with the dataset's (CartPole's are not BabyAI's)
    assert f"error: the observation space of environment {env_id!r}, Dict(" in done.stderr, done.stderr
    assert not out.exists()


@pytest.fixture(scope="module")
def cartpole_dataset(tmp_path_factory):
    """``(MINARI_DATASETS_PATH, dataset id)``: three episodes of the example's scripted CartPole controller."""
    import warnings
    from pathlib import Path

    pytest.importorskip("minari")
    examples = Path(__file__).resolve().parents[2] / "examples" / "datasets"
    root = tmp_path_factory.mktemp("minari-env-ids")
    sys.path.insert(0, str(examples))
    try:
        from scripted_cartpole import make_dataset
    finally:
        sys.path.remove(str(examples))
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        make_dataset(str(root), episodes=3, seed=100, dataset_id="test/cartpole-ids-v0", horizon=20)
    return root, "test/cartpole-ids-v0"
