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

import contextlib
import functools
import json
import sys
import types
from pathlib import Path

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


@contextlib.contextmanager
def _distribution_checks(on: bool):
    import torch as th

    before = th.distributions.Distribution._validate_args
    th.distributions.Distribution.set_default_validate_args(on)
    try:
        yield
    finally:
        th.distributions.Distribution.set_default_validate_args(before)


@pytest.fixture
def distribution_checks():
    """``with distribution_checks(on):``: torch's distributions check their parameters' values (``on``) or not, as
    ``set_default_validate_args`` says, restored afterwards (a ``meta`` tensor has no values to check; the lean
    scores must match torch's with the checks and without)."""
    return _distribution_checks


# Robot datasets written by the tests in the published layouts (robomimic's HDF5, LeRobot's v3.0 and v2.1 folders),
# for the datasets tests and `curteach rank`'s (the fixture ``robot_files``), from a scripted 2-D point-reaching
# controller whose action noise grows with the operator's quality label. Position ``p`` starts near the origin, the goal
# ``g`` is drawn on a circle of radius 1; each step's action is ``clip(2 (g - p), -1, 1) + N(0, sigma_q^2)`` and
# ``p <- p + 0.1 a``; the episode ends when ``|g - p| < 0.05`` (reward 1, done) or after 80 steps. ``sigma`` is 0.02
# (better), 0.15 (okay), 0.6 (worse): worse demonstrations are noisier and, as in robomimic's multi-human data, longer.

QUALITIES = ("better", "okay", "worse")
SIGMA = {"better": 0.02, "okay": 0.15, "worse": 0.6}
TASKS = ("reach the left target", "reach the right target")


def reaching_episodes(n: int = 30, seed: int = 0) -> list[dict]:
    """``n`` episodes, qualities in a seeded shuffle of equal thirds: dicts of ``pos (T + 1, 3)``, ``goal (T + 1, 3)``,
    ``actions (T, 2)``, ``rewards (T,)``, ``dones (T,)``, ``quality``, ``task``."""
    rng = np.random.default_rng(seed)
    qualities = rng.permutation(np.array([QUALITIES[i % 3] for i in range(n)]))
    episodes = []
    for quality in qualities.tolist():
        angle = rng.uniform(0, 2 * np.pi)
        goal = np.array([np.cos(angle), np.sin(angle)])
        p = rng.normal(0, 0.05, size=2)
        positions, actions = [p.copy()], []
        for _ in range(80):
            a = np.clip(2 * (goal - p), -1, 1) + rng.normal(0, SIGMA[quality], size=2)
            p = p + 0.1 * a
            positions.append(p.copy())
            actions.append(a)
            if np.linalg.norm(goal - p) < 0.05:
                break
        steps = len(actions)
        success = bool(np.linalg.norm(goal - p) < 0.05)
        rewards = np.zeros(steps)
        dones = np.zeros(steps, dtype=np.int64)
        if success:
            rewards[-1], dones[-1] = 1.0, 1
        pos3 = np.concatenate([np.array(positions), np.zeros((steps + 1, 1))], axis=1)
        goal3 = np.tile(np.append(goal, 0.0), (steps + 1, 1))
        episodes.append({"pos": pos3, "goal": goal3, "actions": np.array(actions), "rewards": rewards,
                         "dones": dones, "quality": quality, "task": TASKS[int(goal[0] > 0)]})
    return episodes


def write_robomimic(path: Path, episodes: list[dict], *, image: bool = True, next_obs: bool = True,
                    masks: dict | None = None) -> Path:
    """A robomimic-format file: ``data/demo_<i>`` with ``obs/object`` (the goal), ``obs/robot0_eef_pos``, an
    ``obs/agentview_image`` when ``image``, ``next_obs``, ``actions``, ``rewards``, ``dones``, ``states``; filter keys
    ``better``/``okay``/``worse`` (or ``masks``), ``train``/``valid``; ``data`` attrs ``total`` and ``env_args``."""
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        total = 0
        for i, ep in enumerate(episodes):
            demo = data.create_group(f"demo_{i}")
            steps = len(ep["actions"])
            demo.attrs["num_samples"] = steps
            total += steps
            demo.create_dataset("actions", data=ep["actions"])
            demo.create_dataset("rewards", data=ep["rewards"])
            demo.create_dataset("dones", data=ep["dones"])
            demo.create_dataset("states", data=np.concatenate([ep["pos"], ep["goal"]], axis=1)[:-1])
            for kind, rows in (("obs", slice(0, steps)), ("next_obs", slice(1, steps + 1))):
                if kind == "next_obs" and not next_obs:
                    continue
                group = demo.create_group(kind)
                group.create_dataset("object", data=ep["goal"][rows])
                group.create_dataset("robot0_eef_pos", data=ep["pos"][rows])
                if image:
                    group.create_dataset("agentview_image", data=np.zeros((steps, 8, 8, 3), dtype=np.uint8))
        data.attrs["total"] = total
        data.attrs["env_args"] = json.dumps({"env_name": "PointReach", "type": 1, "env_kwargs": {"horizon": 80}})
        if masks is None:
            masks = {q: [f"demo_{i}" for i, ep in enumerate(episodes) if ep["quality"] == q] for q in QUALITIES}
            masks["train"] = [f"demo_{i}" for i in range(len(episodes)) if i % 10]
            masks["valid"] = [f"demo_{i}" for i in range(len(episodes)) if not i % 10]
        for key, names in masks.items():
            f[f"mask/{key}"] = np.array(names, dtype="S")
    return path


def _features(state: int, action: int, success: bool = False) -> dict:
    features = {
        "observation.state": {"dtype": "float32", "shape": [state], "names": [f"s{i}" for i in range(state)]},
        "observation.images.top": {"dtype": "video", "shape": [8, 8, 3], "names": ["height", "width", "channels"]},
        "action": {"dtype": "float32", "shape": [action], "names": [f"a{i}" for i in range(action)]},
        "next.reward": {"dtype": "float32", "shape": [1], "names": None},
        "next.done": {"dtype": "bool", "shape": [1], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    }
    if success:  # as pusht's: True on the frame whose action reached the goal
        features["next.success"] = {"dtype": "bool", "shape": [1], "names": None}
    return features


def _frames(episodes: list[dict], indices: list[int], first_index: int, success: bool = False):
    """A pyarrow table of the frames of ``episodes[indices]`` (state = position and goal, x and y; ``next.success``
    the ``dones`` with ``success``)."""
    import pyarrow as pa

    rows = {k: [] for k in ("observation.state", "action", "next.reward", "next.done", "timestamp", "frame_index",
                            "episode_index", "index", "task_index", *(("next.success",) if success else ()))}
    index = first_index
    for e in indices:
        ep = episodes[e]
        steps = len(ep["actions"])
        state = np.concatenate([ep["pos"][:steps, :2], ep["goal"][:steps, :2]], axis=1).astype(np.float32)
        for t in range(steps):
            rows["observation.state"].append(state[t].tolist())
            rows["action"].append(ep["actions"][t].astype(np.float32).tolist())
            rows["next.reward"].append(float(ep["rewards"][t]))
            rows["next.done"].append(bool(ep["dones"][t]))
            rows["timestamp"].append(t / 10)
            rows["frame_index"].append(t)
            rows["episode_index"].append(e)
            rows["index"].append(index)
            rows["task_index"].append(TASKS.index(ep["task"]))
            if success:
                rows["next.success"].append(bool(ep["dones"][t]))
            index += 1
    vector = pa.list_(pa.float32())
    types = {"observation.state": vector, "action": vector, "next.reward": pa.float32(), "next.done": pa.bool_(),
             "next.success": pa.bool_(), "timestamp": pa.float32()}
    return pa.table({k: pa.array(v, type=types.get(k, pa.int64())) for k, v in rows.items()})


def _info(version: str, episodes: list[dict], data_path: str, success: bool = False) -> dict:
    return {"codebase_version": version, "robot_type": "point", "total_episodes": len(episodes),
            "total_frames": int(sum(len(ep["actions"]) for ep in episodes)), "total_tasks": len(TASKS),
            "chunks_size": 1000, "fps": 10, "splits": {"train": f"0:{len(episodes)}"}, "data_path": data_path,
            "video_path": None, "features": _features(4, 2, success)}


def write_lerobot_v3(root: Path, episodes: list[dict], files: int = 2, success: bool = False) -> Path:
    """A LeRobot v3.0 folder: the episodes split over ``files`` data files, the episodes table with offsets, stats
    columns and a ``quality`` column, ``meta/tasks.parquet`` written by pandas with the task as the index; a
    ``next.success`` feature with ``success``."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / "meta").mkdir(parents=True)
    json.dump(_info("v3.0", episodes, "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", success),
              open(root / "meta" / "info.json", "w"), indent=4)
    rows, first = [], 0
    for file_index, chunk in enumerate(np.array_split(np.arange(len(episodes)), files)):
        table = _frames(episodes, chunk.tolist(), first, success)
        path = root / "data" / "chunk-000" / f"file-{file_index:03d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        for e in chunk.tolist():
            steps = len(episodes[e]["actions"])
            rows.append({"episode_index": e, "tasks": [episodes[e]["task"]], "length": steps,
                         "data/chunk_index": 0, "data/file_index": file_index, "dataset_from_index": first,
                         "dataset_to_index": first + steps, "meta/episodes/chunk_index": 0,
                         "meta/episodes/file_index": 0, "stats/action/mean": episodes[e]["actions"].mean(0).tolist(),
                         "quality": episodes[e]["quality"]})
            first += steps
    path = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    tasks = pd.DataFrame({"task_index": range(len(TASKS))}, index=pd.Index(list(TASKS), name="task"))
    tasks.to_parquet(root / "meta" / "tasks.parquet")
    json.dump({}, open(root / "meta" / "stats.json", "w"))
    return root


def write_lerobot_v21(root: Path, episodes: list[dict], success: bool = False) -> Path:
    """A LeRobot v2.1 folder: one data file per episode, ``meta/episodes.jsonl`` and ``meta/tasks.jsonl``; a
    ``next.success`` feature with ``success``."""
    import pyarrow.parquet as pq

    (root / "meta").mkdir(parents=True)
    json.dump(_info("v2.1", episodes, "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", success),
              open(root / "meta" / "info.json", "w"), indent=4)
    first = 0
    with open(root / "meta" / "episodes.jsonl", "w") as lines:
        for e, ep in enumerate(episodes):
            path = root / "data" / "chunk-000" / f"episode_{e:06d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(_frames(episodes, [e], first, success), path)
            first += len(ep["actions"])
            lines.write(json.dumps({"episode_index": e, "tasks": [ep["task"]], "length": len(ep["actions"])}) + "\n")
    with open(root / "meta" / "tasks.jsonl", "w") as lines:
        for i, task in enumerate(TASKS):
            lines.write(json.dumps({"task_index": i, "task": task}) + "\n")
    return root


def renumber_lerobot(root: Path, ids: list[int]) -> None:
    """Give the episodes of a v3.0 folder the ids ``ids`` (in order), in the data files and the episodes table (a
    dataset whose ``episode_index`` values have gaps)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in sorted((root / "data").glob("*/*.parquet")) + sorted((root / "meta" / "episodes").glob("*/*.parquet")):
        table = pq.read_table(path)
        column = table.schema.get_field_index("episode_index")
        table = table.set_column(column, "episode_index",
                                 pa.array([ids[e] for e in table.column(column).to_pylist()], type=pa.int64()))
        pq.write_table(table, path)


@pytest.fixture
def robot_files():
    """The robot-dataset writers: ``reaching_episodes``, ``write_robomimic``, ``write_lerobot_v3``,
    ``write_lerobot_v21``, ``renumber_lerobot``, and the ``QUALITIES`` and ``TASKS`` they use."""
    return types.SimpleNamespace(QUALITIES=QUALITIES, TASKS=TASKS, reaching_episodes=reaching_episodes,
                                 write_robomimic=write_robomimic, write_lerobot_v3=write_lerobot_v3,
                                 write_lerobot_v21=write_lerobot_v21, renumber_lerobot=renumber_lerobot)
