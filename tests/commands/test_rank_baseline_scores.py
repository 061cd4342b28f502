"""The scores that need no environment (``deminf``, ``policy-loss``, ``action-likelihood``, ``action-variance``)
through ``curteach rank`` on a robomimic file, a LeRobot folder and a Minari dataset, with ``--policy diffusion``,
and through ``curteach dataset-bc``; a bad option is one line, exit 2, before anything is fitted."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("h5py")
pytest.importorskip("pyarrow")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

KEYS = "object,robot0_eef_pos"
SCORES = ("deminf", "policy-loss", "action-likelihood", "action-variance")
TINY = ["--policy-steps", "5", "--action-samples", "2", "--deminf-k", "3", "--no-progress"]


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(8, seed=3)


def _scores(out):
    return [float(row["score"]) for row in csv.DictReader(open(out / "scores.csv"))]


@pytest.mark.parametrize("score", SCORES)
def test_rank_on_the_three_formats(score, robot_files, tmp_path, episodes, monkeypatch):
    from curteach_teaching.datasets import read_pool, read_robomimic, write_pool

    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    out = tmp_path / "robomimic"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", score, "--keep", "0.5",
                 "--filter-key", "kept", *TINY, "--out", str(out)]) == 0
    scores = _scores(out)
    assert len(scores) == 8 and np.isfinite(scores).all() and len(set(scores)) > 1
    report = json.loads((out / "rank.json").read_text())
    assert report["kept"] == 4 and report[score]["seed"] == 0 and report[score]["policy"] == "auto"
    prefix = "deminf" if score == "deminf" else "policy"
    assert list((out / "teachers").glob(f"{prefix}-*.npz"))
    # again: read from the cache, the same scores
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", score, *TINY, "--out", str(out)]) == 0
    assert _scores(out) == scores

    root = robot_files.write_lerobot_v3(tmp_path / "lerobot", episodes)
    out = tmp_path / "lerobot-out"
    assert main(["rank", "--dataset", str(root), "--score", score, "--keep", "0.5", *TINY, "--out", str(out)]) == 0
    assert len(json.loads((out / "episodes.json").read_text())) == 4

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    write_pool(read_robomimic(path, KEYS.split(",")), "point/reach-v0")
    out = tmp_path / "minari-out"
    assert main(["rank", "--dataset", "point/reach-v0", "--score", score, "--keep", "0.5", *TINY,
                 "--out", str(out)]) == 0
    assert len(read_pool(out / "datasets" / "point" / "reach-curated-v0")) == 4


def test_policy_loss_with_a_diffusion_learner(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "policy-loss+action-variance",
                 "--policy", "diffusion", "--keep", "0.5", *TINY, "--out", str(out)]) == 0
    scores = _scores(out)
    assert len(scores) == 8 and np.isfinite(scores).all()
    assert len(list((out / "teachers").glob("policy-*.npz"))) == 2  # one policy's log-likelihoods and spread
    # and a LeRobot folder of the same episodes (issue 54's "done when": a robomimic file and a LeRobot folder)
    root = robot_files.write_lerobot_v3(tmp_path / "lerobot", episodes)
    out = tmp_path / "lerobot-out"
    assert main(["rank", "--dataset", str(root), "--score", "policy-loss", "--policy", "diffusion", "--keep", "0.5",
                 *TINY, "--out", str(out)]) == 0
    scores = _scores(out)
    assert len(scores) == 8 and np.isfinite(scores).all() and len(set(scores)) > 1
    assert len(json.loads((out / "episodes.json").read_text())) == 4


@pytest.mark.parametrize(("flags", "message"), [
    (["--score", "deminf", "--deminf-k", "0"], "--deminf-k must be"),
    (["--score", "deminf", "--deminf-encoder", "umap"], "--deminf-encoder must be one of vae, pca"),
    (["--score", "policy-loss", "--policy-steps", "0"], "--policy-steps must be"),
    (["--score", "action-variance", "--action-samples", "1"], "--action-samples must be"),
    (["--score", "action-likelihood", "--likelihood-bandwidth", "-1"], "--likelihood-bandwidth must be")])
def test_a_bad_option_is_one_line_before_any_fit(flags, message, robot_files, tmp_path, episodes, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not out.exists()
    argv = ["dataset-bc", "--dataset", str(path), "--obs-keys", KEYS, "--holdout", "0.3", "--curricula",
            "Agn,Cur-T@select", "--task-difficulty", "length", flags[2], flags[3], "--out", str(out)]
    assert main(argv) == 2  # a flag no cell reads is checked too
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not out.exists()


def test_dataset_bc_selects_by_each_score(robot_files, tmp_path):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(9, seed=2))
    out = tmp_path / "out"
    small = ["--runs", "1", "--max-batches", "6", "--eval-every", "3", "--batch-size", "16", "--backend", "serial",
             "--no-progress", "--no-figures"]
    curricula = ",".join(["Agn", *(f"Cur-T@select/{score}" for score in SCORES)])
    assert main(["dataset-bc", "--dataset", str(path), "--obs-keys", KEYS, "--holdout", "0.3", "--curricula",
                 curricula, "--keep", "0.5", *small, *TINY, "--out", str(out)]) == 0
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["cells"]["Cur-T+select+deminf"]["deminf_k"] == 3
    assert sweep["cells"]["Cur-T+select+policy-loss"]["policy_steps"] == 5
    assert sweep["cells"]["Cur-T+select+action-variance"]["action_samples"] == 2
    # the new options are the cells' own: the shared settings name none of them, at their defaults or not
    assert not {"deminf_k", "policy_steps", "action_samples"} & set(sweep["settings"])
