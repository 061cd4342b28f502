"""Continuous-action datasets made the usual ways, as a new user brings them to ``curteach dataset-bc``.

- The D4RL-style layout of Minari's hosted datasets (the ports of D4RL's Adroit, Kitchen, PointMaze): step infos
  holding ``success`` and ``timeouts`` (one bool per step), written here with Minari's ``create_dataset_from_buffers``
  for Pendulum with a success flag of our own (the pendulum within 0.3 rad of upright). ``read_pool`` keeps the
  infos; dataset-bc trains, evaluates and reports success because the infos hold ``success``; the success it reports
  is the environment's own at evaluation, and Pendulum reports none, so it is 0 (docs/datasets.md, "Making a
  dataset").
- A dataset whose recorded environment lives in a package that is not installed: one line naming the package and
  the two ways on (``--env none``, ``--env ID``), exit 2, nothing written; with ``--env none`` it runs.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

D4RL_STYLE = "test/pendulum-d4rl-v0"
NO_PACKAGE = "test/pendulum-nopackage-v0"
N_EPISODES, HORIZON = 6, 40
TINY = ["--max-batches", "20", "--eval-every", "10", "--batch-size", "32", "--backend", "serial", "--no-progress",
        "--no-figures"]


def _upright(obs: np.ndarray) -> np.ndarray:
    """``(T,)`` bool: the pendulum within 0.3 rad of upright (``cos(theta) = obs[:, 0]``)."""
    return obs[:, 0] > np.cos(0.3)


def _episodes(seed0: int = 7):
    """``N_EPISODES`` Pendulum episodes of ``HORIZON`` steps of a damped energy-pumping controller (torques clipped
    to [-2, 2]), with D4RL-style infos: ``success`` and ``timeouts`` one bool per observation (reset included, as
    Minari stores infos), ``timeouts`` true on the last one only (cut by the horizon, never terminated)."""
    import gymnasium as gym
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env = gym.make("Pendulum-v1")
    buffers = []
    for i in range(N_EPISODES):
        obs, _ = env.reset(seed=seed0 + i)
        observations, actions, rewards = [obs], [], []
        for _ in range(HORIZON):
            cos, sin, speed = obs
            torque = np.clip(-6.0 * sin - 1.0 * speed if cos > 0 else 2.0 * np.sign(speed or 1.0), -2.0, 2.0)
            action = np.array([torque], dtype=np.float32)
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs)
            actions.append(action)
            rewards.append(float(reward))
        observations = np.asarray(observations, dtype=np.float32)
        timeouts = np.zeros(HORIZON + 1, dtype=bool)
        timeouts[-1] = True
        buffers.append(EpisodeBuffer(
            id=i, seed=seed0 + i, observations=observations, actions=np.asarray(actions), rewards=rewards,
            terminations=[False] * HORIZON, truncations=[False] * (HORIZON - 1) + [True],
            infos={"success": _upright(observations), "timeouts": timeouts}))
    return env, buffers


def _write(root, dataset: str, spec=None) -> None:
    """Write the episodes as Minari dataset ``dataset`` under ``root``, recording ``spec`` (default: Pendulum's)."""
    import minari

    env, buffers = _episodes()
    if spec is not None:  # the spec Minari stores is the env's: give the env the spec of a package not installed
        env.unwrapped.spec = spec
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(dataset, buffers, env=env.unwrapped if spec is not None else env,
                                           algorithm_name="scripted")


@pytest.fixture(scope="module")
def d4rl_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("minari-d4rl")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        _write(root, D4RL_STYLE)
    return root


def test_read_pool_keeps_the_d4rl_style_infos(d4rl_root, monkeypatch):
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.prepared import success_defined

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(d4rl_root))
    pool = read_pool(D4RL_STYLE)
    _, buffers = _episodes()
    assert len(pool) == N_EPISODES and pool.env_spec.id == "Pendulum-v1"
    for info, buffer, trajectory in zip(pool.infos, buffers, pool.trajectories):
        assert sorted(info) == ["success", "timeouts"]
        np.testing.assert_array_equal(np.asarray(info["success"], dtype=bool), buffer.infos["success"])
        np.testing.assert_array_equal(np.asarray(info["timeouts"], dtype=bool), buffer.infos["timeouts"])
        np.testing.assert_array_equal(trajectory.acts, np.asarray(buffer.actions))
        assert not trajectory.terminal  # timeouts are truncations: the episode did not end by itself
    # the controller swings some episodes up within the horizon and not others: the flags are not all one value
    reached = [bool(np.any(info["success"])) for info in pool.infos]
    assert any(reached) and not all(reached)
    assert success_defined(pool)  # the infos hold success: dataset-bc reports it


def test_dataset_bc_on_the_d4rl_style_layout_reports_the_envs_success(d4rl_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(d4rl_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", D4RL_STYLE, "--curricula", "Agn,Cur", "--runs", "2", "--eval-episodes", "2",
            "--no-sampled", *TINY, "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "paired against Agn" in printed and "Cur - Agn: final" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["paired"]["statistics"]["Cur"]["final"]["pairs"] == 2
    assert "success" in (out / "summary.csv").read_text().splitlines()[0]  # reported: the infos hold success
    for cell in ("Agn", "Cur"):
        files = sorted((out / "runs" / cell).glob("*.json"))
        assert len(files) == 2
        for path in files:
            curves = json.loads(path.read_text())["data"]["curves"]
            assert len(curves["return"]) == 3 and all(-16.3 * 200 < v < 0 for v in curves["return"])
            # success at evaluation is the environment's own signal, never the dataset's flag: Pendulum has none
            assert curves["success"] == [0.0] * 3


def test_a_missing_env_package_is_one_line_and_env_none_runs(tmp_path, monkeypatch, capsys):
    import gymnasium as gym

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "data"))
    spec = dataclasses.replace(gym.spec("Pendulum-v1"), id="NoSuchPendulum-v0",
                               entry_point="no_such_package.envs:Env")
    _write(tmp_path / "data", NO_PACKAGE, spec=spec)
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", NO_PACKAGE, "--curricula", "Agn,Cur", "--runs", "2", *TINY]
    assert main([*args, "--eval-episodes", "2", "--no-sampled", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    message = captured.err.strip()
    assert len(message.splitlines()) == 1 and captured.out == ""
    assert "no_such_package" in message and "--env none" in message and "--env ID" in message
    assert not out.exists()

    assert main([*args, "--env", "none", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Cur - Agn: final" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["paired"]["statistics"]["Cur"]["final"]["pairs"] == 2


def test_check_entry_point_names_the_missing_package_not_the_module(tmp_path, monkeypatch):
    import gymnasium as gym

    from curteach_teaching.datasets.env_ids import check_entry_point

    pendulum = gym.spec("Pendulum-v1")
    check_entry_point(pendulum)  # installed: nothing to say
    # a module that is there but imports a package that is not (a MuJoCo env without mujoco, say): that package
    (tmp_path / "env_needing_a_dependency.py").write_text("import no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    needy = dataclasses.replace(pendulum, id="Needy-v0", entry_point="env_needing_a_dependency:Env")
    with pytest.raises(ValueError, match=r"needs the package 'no_such_dependency', which is not installed") as caught:
        check_entry_point(needy)
    assert "\n" not in str(caught.value)
    absent = dataclasses.replace(pendulum, id="Absent-v0", entry_point="gymnasium.envs.classic_control:NoSuchEnv")
    with pytest.raises(ValueError, match=r"cannot load its entry point 'gymnasium.envs.classic_control:NoSuchEnv'"):
        check_entry_point(absent)


def test_data_collector_without_jax_names_minaris_create_extra():
    """What docs/datasets.md says of ``minari.DataCollector``: without jax (curteach never installs it) it stops at
    its first ``step`` (the reset is only kept), naming ``minari[create]``."""
    import importlib.util

    if importlib.util.find_spec("jax") is not None:
        pytest.skip("jax is installed here: the collector works")
    import gymnasium as gym
    from minari import DataCollector

    env = DataCollector(gym.make("Pendulum-v1"))
    env.reset(seed=0)
    with pytest.raises(ImportError, match=r"minari\[create\]"):
        env.step(np.zeros(1, dtype=np.float32))
    env.close()
