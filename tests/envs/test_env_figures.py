"""docs/figures/make_env_figures.py: the environment pictures of the docs are drawn, the same on every run, and
what they show is right (the expert's path on every car task type, the stored optimal paths of the navigation
tasks)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from curteach_envs import CarTeachEnv
from curteach_envs.navigation import replay

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "figures" / "make_env_figures.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("make_env_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_writes_the_same_pngs_on_every_run(script, tmp_path):
    from PIL import Image

    first = script.main(["--out", str(tmp_path / "a")])
    second = script.main(["--out", str(tmp_path / "b")])
    assert [p.name for p in first] == ["car-task-types.png", "nav-tasks.png"]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()
        with Image.open(a) as image:
            assert image.format == "PNG" and min(image.size) > 300


def test_the_committed_pictures_exist_and_are_linked():
    docs = SCRIPT.parents[1]
    for name, page in [("car-task-types.png", "environments/car.md"), ("nav-tasks.png", "environments/navigation.md")]:
        assert (SCRIPT.parent / name).is_file()
        assert f"../figures/{name}" in (docs / page).read_text(encoding="utf-8")


def test_car_paths_follow_the_expert_row_by_row(script):
    env = CarTeachEnv(layout_seed=script.CAR_LAYOUT_SEED, n_instances=1)
    mdp = env.tabular()
    paths = script.car_expert_paths(env)
    assert len(paths) == 8  # one task of each type
    road_length = env.road.shape[2]
    for start, states in zip(mdp.start_states, paths, strict=True):
        assert states[0] == start and len(states) == road_length
        rows = [(s % (2 * road_length)) // 2 for s in states]
        assert rows == list(range(road_length))  # one row forward per step, within the task


def test_navigation_paths_earn_their_stored_return(script):
    examples = script.nav_examples()
    assert [type(task).__name__ for _, task, _, _ in examples] == ["ShortestPathTask", "TSPTask"]
    for _, task, actions, reward in examples:
        poses, _, rewards, ended = replay(task, np.asarray(actions))
        assert ended and np.all(poses >= 0)
        assert float(np.sum(rewards)) == pytest.approx(reward)
