"""demo-score end to end on the scripted Pendulum pool (it reports no success: a rollout's outcome is a return above
the median): the recorded rollouts of a fitted learner, ``rank --score demo-score`` (cached), ``rank --compare`` and
``dataset-bc --task-difficulty demo-score``; and refused in one line, exit 2, before any fit, on data without an
environment (a robomimic file; dataset-bc's held-out mode)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")
pytest.importorskip("h5py")

from curteach_teaching.cli import main  # noqa: E402

PENDULUM = "test/pendulum-scripted-v0"  # the pendulum_root fixture's dataset (tests/experiments/conftest.py)
TINY = ["--demo-score-steps", "30", "--demo-score-rollouts", "3", "--demo-score-epochs", "5", "--no-progress"]


def _prepared(pendulum_root, monkeypatch):
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.prepare import learner_factory, prepare

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    data = prepare(read_pool([PENDULUM]), ["length"], policy="auto")
    return data, learner_factory("auto", data)


def test_roll_out_records_what_the_evaluator_runs(pendulum_root, monkeypatch):
    from curteach_teaching.datasets.scores.env_rollouts import fresh_seeds, roll_out
    from curteach_teaching.rollouts import evaluate_policy

    data, factory = _prepared(pendulum_root, monkeypatch)
    learner = factory(7)
    seeds = fresh_seeds(data, 2)
    episodes = roll_out(data, learner, seeds, greedy=True)
    plain = evaluate_policy(learner, lambda: data.codec.wrap_env(data.make_env(PENDULUM), PENDULUM), seeds[PENDULUM])
    assert [e.seed for e in episodes] == seeds[PENDULUM].tolist() and all(e.group == PENDULUM for e in episodes)
    np.testing.assert_allclose([e.episode_return for e in episodes], plain.returns)
    env = data.make_env(PENDULUM)
    for e in episodes:
        assert e.observations.shape == (60, 3) and e.actions.shape == (60, 1) and not e.reported
        np.testing.assert_allclose(e.observations[0], env.reset(seed=e.seed)[0])
        # the actions as the learner chose them (recorded before the env's clip), acted on here in one batch of
        # another size: float32 rounding apart (a greedy torque of about 1e-4 differs by about 1e-9)
        np.testing.assert_allclose(e.actions, learner.act(e.observations), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="is a demonstration's reset seed"):
        roll_out(data, learner, {PENDULUM: [int(data.seeds[0])]})


def test_greedy_rollouts_are_the_deployed_policy_and_sampled_ones_differ(pendulum_root, monkeypatch):
    from curteach_teaching.datasets.scores.demo_score import DemoScore

    data, factory = _prepared(pendulum_root, monkeypatch)
    made = []

    def learner(*args, **kwargs):
        made.append(factory(*args, **kwargs))
        return made[-1]

    def run(actions):
        score = DemoScore(demo_score_steps=30, demo_score_checkpoints=2, demo_score_rollouts=3,
                          demo_score_actions=actions)
        return score.rollouts(data, learner, seed=4)

    greedy = run("greedy")
    # the last checkpoint's rollouts act by the trained policy's greedy actions (its mean), step by step
    for e in greedy[-1]:
        np.testing.assert_allclose(e.actions, made[-1].act(e.observations), rtol=1e-5, atol=1e-7)
    again = run("greedy")
    for mine, other in zip((e for k in greedy for e in k), (e for k in again for e in k), strict=True):
        np.testing.assert_array_equal(mine.actions, other.actions)  # greedy: no random numbers, the same rollouts
    sampled = run("sampled")
    assert [e.seed for k in sampled for e in k] == [e.seed for k in greedy for e in k]  # the same reset seeds
    assert all(not np.allclose(s.actions, g.actions) for s, g in zip(sampled[-1], greedy[-1], strict=True))


def _scores(out):
    return [float(row["score"]) for row in csv.DictReader(open(out / "scores.csv"))]


def test_rank_and_compare(pendulum_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "rank"
    assert main(["rank", "--dataset", PENDULUM, "--score", "demo-score", "--keep", "0.5", *TINY,
                 "--out", str(out)]) == 0
    scores = _scores(out)
    assert len(scores) == 12 and np.isfinite(scores).all() and all(0 <= s <= 1 for s in scores)
    assert len(set(scores)) > 1
    report = json.loads((out / "rank.json").read_text())
    assert report["demo-score"]["demo_score_rollouts"] == 3 and report["demo-score"]["steps"] == 30
    assert report["demo-score"]["demo_score_actions"] == "greedy"
    assert len(list((out / "teachers").glob("demo-score-*.npz"))) == 1
    assert main(["rank", "--dataset", PENDULUM, "--score", "demo-score", *TINY, "--out", str(out)]) == 0
    assert _scores(out) == scores  # read from the cache
    assert main(["rank", "--dataset", PENDULUM, "--score", "demo-score", "--demo-score-actions", "sampled", *TINY,
                 "--out", str(out)]) == 0
    assert json.loads((out / "rank.json").read_text())["demo-score"]["demo_score_actions"] == "sampled"
    assert len(list((out / "teachers").glob("demo-score-*.npz"))) == 2  # its own cache: other rollouts, other scores
    assert _scores(out) != scores

    compare = tmp_path / "compare"
    assert main(["rank", "--dataset", PENDULUM, "--compare", "demo-score", "--label", "noisy", *TINY,
                 "--out", str(compare)]) == 0
    rows = json.loads((compare / "compare.json").read_text())["scores"]
    assert list(rows) == ["length", "demo-score"]
    assert {"auroc", "spearman_length", "kept_overlap_length", "seconds"} <= set(rows["demo-score"])
    assert 0 <= rows["demo-score"]["auroc"] <= 1


def test_dataset_bc(pendulum_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", PENDULUM, "--curricula", "Agn,Cur-T@select", "--task-difficulty",
                 "demo-score", "--runs", "1", "--max-batches", "4", "--eval-every", "2", "--eval-episodes", "2",
                 "--backend", "serial", "--no-figures", "--demo-score-actions", "sampled", *TINY,
                 "--out", str(out)]) == 0
    assert len(list((out / "teachers").glob("demo-score-*.npz"))) == 1
    sweep = json.loads((out / "sweep.json").read_text())
    cell = sweep["cells"]["Cur-T+select"]
    assert cell["task"] == "demo-score" and cell["demo_score_rollouts"] == 3 and cell["demo_score_steps"] == 30
    assert "3 checkpoints x 3 sampled rollouts" in capsys.readouterr().out  # the option reached the fit
    # sampled: the cell's settings (its fingerprint) as before the option existed, when every rollout was sampled
    assert "demo_score_actions" not in cell
    # the options are the cell's own: the shared settings name none of them
    assert not {"demo_score_rollouts", "demo_score_steps", "demo_score_actions"} & set(sweep["settings"])


def test_refused_without_an_environment(pendulum_root, robot_files, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "bc"
    assert main(["dataset-bc", "--dataset", PENDULUM, "--env", "none", "--curricula", "Agn,Cur-T@select",
                 "--task-difficulty", "demo-score", "--runs", "1", *TINY, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "task score demo-score rolls policies out" in err
    assert "held-out demonstrations" in err and "the scores that need none: length, return, level, ensemble" in err
    assert not out.exists()

    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(6, seed=1))
    for flags in (["--score", "demo-score"], ["--compare", "ensemble,demo-score"]):
        out = tmp_path / flags[0].strip("-")
        assert main(["rank", "--dataset", str(path), "--obs-keys", "object,robot0_eef_pos", *flags, *TINY,
                     "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "demo-score rolls policies out" in err and "deminf" in err
        assert "records no environment" in err and not (out / "teachers").exists()
