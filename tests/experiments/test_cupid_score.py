"""The ``cupid`` score end to end on a Minari dataset with its environment (the scripted Pendulum of conftest.py):
``rank --score cupid`` (cached, deterministic), ``rank --compare cupid,length``, ``dataset-bc --task-difficulty
cupid``; the score's rollouts, weights and refusal without an environment."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

PENDULUM = "test/pendulum-scripted-v0"
TINY = ["--policy-steps", "20", "--cupid-rollouts", "3", "--cupid-projection-dim", "32", "--no-progress"]


def _scores(out):
    return [float(row["score"]) for row in csv.DictReader(open(out / "scores.csv"))]


def test_rank_by_cupid_is_cached_and_deterministic(pendulum_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", "--keep", "0.5", *TINY, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rollouts weighted by centred return" in printed  # Pendulum reports no success
    # the MLP's 3 linear layers factored (64 x 4, 64 x 65, 1 x 65 at side 3: 9 + 9 + 3) beside its log_std
    assert "gradients by hooks, projection kronecker (3 linear layers, 1 other parameters, k 22)" in printed
    scores = _scores(out)
    assert len(scores) == 12 and np.isfinite(scores).all() and len(set(scores)) == 12
    report = json.loads((out / "rank.json").read_text())
    assert report["kept"] == 6 and report["cupid"]["cupid_rollouts"] == 3 and report["cupid"]["steps"] == 20
    assert len(list((out / "teachers").glob("cupid-*.npz"))) == 1
    # again into the same folder: read from the cache; into a fresh one: fitted again, the same numbers
    assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", "--keep", "0.5", *TINY, "--out", str(out),
                 "--overwrite"]) == 0
    assert "read from the cache" in capsys.readouterr().out and _scores(out) == scores
    fresh = tmp_path / "fresh"
    assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", *TINY, "--out", str(fresh)]) == 0
    assert _scores(fresh) == scores
    # another projection seed's worth of settings gives other numbers (the option reaches the score)
    other = tmp_path / "other"
    assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", *TINY, "--cupid-projection-dim", "16",
                 "--out", str(other)]) == 0
    assert _scores(other) != scores


def test_the_dense_projection_is_the_fallback_and_deterministic(pendulum_root, tmp_path, monkeypatch, capsys):
    from curteach_teaching.datasets import layer_gradients

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    monkeypatch.setattr(layer_gradients, "REST_LIMIT", 0)  # the policy's log_std is then one parameter too many
    runs = []
    for name in ("a", "b"):
        assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", *TINY, "--out", str(tmp_path / name)]) == 0
        assert "projection dense (1 parameters outside linear layers (more than 0), k 32)" in capsys.readouterr().out
        runs.append(_scores(tmp_path / name))
    assert runs[0] == runs[1] and np.isfinite(runs[0]).all() and len(set(runs[0])) == 12


def test_rank_compare_cupid_with_length(pendulum_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    assert main(["rank", "--dataset", PENDULUM, "--compare", "cupid,length", "--keep", "0.5", *TINY,
                 "--out", str(out)]) == 0
    table = json.loads((out / "compare.json").read_text())
    text = json.dumps(table)
    assert "cupid" in text and "length" in text and "seconds" in text


def test_dataset_bc_with_cupid_as_the_task_difficulty(pendulum_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", PENDULUM, "--task-difficulty", "cupid", "--curricula", "Agn,Cur-T@select",
                 "--keep", "0.5", "--runs", "1", "--max-batches", "20", "--eval-every", "20", "--eval-episodes", "2",
                 "--backend", "serial", "--no-figures", *TINY, "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["cells"] and report["selected_fraction"]
    assert list((out / "teachers").glob("cupid-*.npz"))


def test_the_rollouts_are_sampled_recorded_and_avoid_the_demonstrations_seeds(pendulum_root, monkeypatch):
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.prepare import prepare
    from curteach_teaching.datasets.scores.cupid import _rollouts
    from curteach_teaching.datasets.scores.env_rollouts import ROLLOUT_SEED_BASE
    from curteach_teaching.learners.dataset_learner import LearnerFactory

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    data = prepare(read_pool(PENDULUM), (), policy="mlp")
    learner = LearnerFactory("mlp", data.codec.observation_space, data.action_space)(0)
    first, again = _rollouts(data, learner, 2, seed=5), _rollouts(data, learner, 2, seed=5)
    assert len(first) == 2 and ROLLOUT_SEED_BASE > max(s for s in data.seeds if s is not None)
    for a, b in zip(first, again, strict=True):
        assert a.observations.shape == (60, 3) and a.actions.shape == (60, 1) and not a.reported
        np.testing.assert_array_equal(a.actions, b.actions)  # seeded
    assert not np.array_equal(first[0].actions, _rollouts(data, learner, 2, seed=6)[0].actions)  # and sampled


def test_cupid_refuses_data_without_an_environment(pendulum_root, monkeypatch):
    import dataclasses

    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.prepare import prepare
    from curteach_teaching.datasets.scores.cupid import _rollouts

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    data = dataclasses.replace(prepare(read_pool(PENDULUM), (), policy="mlp"), env_specs={})
    with pytest.raises(ValueError, match="rollouts need the data's environments"):
        _rollouts(data, None, 1, seed=0)


def test_bad_cupid_options_are_one_line_before_any_fit(pendulum_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    for flags, message in ((["--cupid-rollouts", "0"], "cupid_rollouts must be"),
                           (["--cupid-damping", "-1"], "cupid_damping must be a finite number >= 0"),
                           (["--cupid-weights", "mean"], "cupid_weights must be one of success, centred")):
        out = tmp_path / flags[0].strip("-")
        assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", *flags, "--no-progress",
                     "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message.replace("_", "-") in err.replace("_", "-"), err
        assert not out.exists()


def test_cupid_weights_at_the_default_keep_the_committed_cells_and_caches():
    """``cupid_weights`` at ``success`` is left out of the score's settings, so the committed operators sweep's
    cupid cell (recorded before the option existed) is the cell the current code builds, and its caches keep their
    keys; ``centred`` is a setting of its own."""
    from pathlib import Path

    from curteach_teaching.datasets.scores.cupid import CupidScore

    recorded = json.loads((Path(__file__).resolve().parents[2] / "docs" / "results" / "metaworld-operators"
                           / "sweep.json").read_text())["cells"]["Cur-T+select+cupid"]
    default = CupidScore(policy_steps=None)
    assert "cupid_weights" not in default.settings() and "cupid_weights" not in default.describe()
    assert all(recorded[name] == value for name, value in default.settings().items())
    assert CupidScore(policy_steps=None, cupid_weights="centred").settings()["cupid_weights"] == "centred"


def test_centred_weights_reach_the_score(pendulum_root, tmp_path, monkeypatch, capsys):
    # Pendulum reports no success, so both weightings centre its returns: the same numbers, the settings apart
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    base, centred = tmp_path / "base", tmp_path / "centred"
    assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", *TINY, "--out", str(base)]) == 0
    assert main(["rank", "--dataset", PENDULUM, "--score", "cupid", *TINY, "--cupid-weights", "centred",
                 "--out", str(centred)]) == 0
    assert _scores(centred) == _scores(base)
    assert json.loads((centred / "rank.json").read_text())["cupid"]["cupid_weights"] == "centred"
    assert "cupid_weights" not in json.loads((base / "rank.json").read_text())["cupid"]
