"""``curteach dataset-bc`` on continuous (Box) actions: a Pendulum dataset of a scripted controller, written by Minari's
``create_dataset_from_buffers`` outside the package, trains, evaluates (greedy and sampled) and reports; bad data and
a policy kind that does not fit are one line, exit 2, nothing written."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

#: as in conftest.py: the scripted Pendulum dataset and its noisy episodes
PENDULUM = "test/pendulum-scripted-v0"
PENDULUM_NOISY = (0, 1, 2, 3)


def test_dataset_bc_trains_evaluates_and_reports_on_box_actions(pendulum_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", PENDULUM, "--curricula", "Agn,Cur", "--runs", "2", "--max-batches", "60",
            "--eval-every", "30", "--eval-episodes", "3", "--backend", "serial", "--no-progress", "--no-figures",
            "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "paired against Agn" in printed and "Cur - Agn: final" in printed
    assert "outside the action space's bounds" not in printed  # the controller's torques are clipped to [-2, 2]
    report = json.loads((out / "report.json").read_text())
    assert report["paired"]["statistics"]["Cur"]["final"]["pairs"] == 2
    assert (out / "summary.csv").read_text().splitlines()[0] == "curriculum,batches,mean,sem,n"  # no success
    for cell in ("Agn", "Cur"):
        files = sorted((out / "runs" / cell).glob("*.json"))
        assert len(files) == 2
        for path in files:
            curves = json.loads(path.read_text())["data"]["curves"]
            # Pendulum rewards are in [-16.3, 0] per step: finite and negative over 60 steps
            for name in ("return", "sampled_return"):
                assert len(curves[name]) == 3 and all(-16.3 * 60 < v < 0 for v in curves[name]), name
            assert curves["length"] == [60.0] * 3  # the environment stored with the data: cut at 60 steps
            assert curves["success"] == [0.0] * 3  # Pendulum reports no success and never terminates
            assert np.isfinite(curves["train:loss"][1:]).all()


def _write(root, dataset, actions_of, observations_of=None, n=3, length=5):
    """A Pendulum-spaced dataset of ``n`` short episodes whose actions (and observations) are given."""
    import gymnasium as gym
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env = gym.make("Pendulum-v1")
    buffers = []
    for i in range(n):
        obs = np.zeros((length + 1, 3), dtype=np.float32) if observations_of is None else observations_of(i)
        buffers.append(EpisodeBuffer(id=i, seed=i + 1000, observations=obs, actions=actions_of(i),
                                     rewards=[-1.0] * length, terminations=[False] * length,
                                     truncations=[False] * (length - 1) + [True], infos={}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(dataset, buffers, env=env, algorithm_name="test")


def test_non_finite_actions_or_observations_name_the_episode_and_write_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "data"))

    def actions(i):
        acts = np.zeros((5, 1), dtype=np.float32)
        if i == 1:
            acts[3, 0] = np.nan
        return acts

    def observations(i):
        obs = np.zeros((6, 3), dtype=np.float32)
        if i == 2:
            obs[4, 2] = np.inf
        return obs

    _write(tmp_path / "data", "test/nan-actions-v0", actions)
    _write(tmp_path / "data", "test/inf-observations-v0", lambda i: np.zeros((5, 1), dtype=np.float32), observations)
    for dataset, message in (("test/nan-actions-v0", "episode 1 of group 'test/nan-actions-v0' (pool index 1) has "
                                                      "NaN or infinite actions"),
                             ("test/inf-observations-v0", "episode 2 of group 'test/inf-observations-v0' (pool "
                                                           "index 2) has NaN or infinite observations")):
        out = tmp_path / dataset.replace("/", "-")
        assert main(["dataset-bc", "--dataset", dataset, "--out", str(out), "--runs", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err
        assert not out.exists()


def test_actions_outside_the_bounds_are_reported_and_a_policy_that_does_not_fit_is_refused(tmp_path, monkeypatch,
                                                                                           capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "data"))

    def actions(i):  # episodes 0 and 2 push past the torque limit of 2, on 2 and 1 steps
        return np.array([[0.0], [2.5], [-3.0], [0.0], [1.0]] if i == 0 else [[0.0]] * 4 + [[2.2]] if i == 2
                        else [[0.5]] * 5, dtype=np.float32)

    _write(tmp_path / "data", "test/outside-v0", actions)
    out = tmp_path / "cnn"
    assert main(["dataset-bc", "--dataset", "test/outside-v0", "--policy", "cnn", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "policy 'cnn' needs image observations" in err, err
    assert not out.exists()
    out = tmp_path / "mlp"
    assert main(["dataset-bc", "--dataset", "test/outside-v0", "--curricula", "Agn", "--runs", "1", "--max-batches",
                 "2", "--eval-every", "2", "--eval-episodes", "1", "--no-sampled", "--no-progress", "--no-figures",
                 "--backend", "serial", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("note: 3 demonstrated actions in 2 episodes (pool indices 0, 2) lie outside the action space's bounds; "
            "they are trained on and scored as given, never clipped") in printed


@pytest.mark.slow
def test_the_ensemble_teacher_drops_mostly_the_noisy_episodes(pendulum_root, tmp_path, monkeypatch):
    """Issue 39's check: with the ensemble's task difficulty, Cur-T@select keeps the clean episodes."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", PENDULUM, "--task-difficulty", "ensemble", "--ensemble-size", "3",
                 "--ensemble-batches", "300", "--curricula", "Agn,Cur-T@select", "--keep", "0.67", "--runs", "1",
                 "--max-batches", "30", "--eval-every", "30", "--eval-episodes", "2", "--backend", "serial",
                 "--no-progress", "--no-figures", "--out", str(out)]) == 0
    run = json.loads(next((out / "runs" / "Cur-T+select").glob("*.json")).read_text())["data"]
    kept = set(run["extras"]["selection"][0]["selected"])
    assert len(kept) == 8
    dropped = set(range(12)) - kept
    assert len(dropped & set(PENDULUM_NOISY)) >= 3, dropped
