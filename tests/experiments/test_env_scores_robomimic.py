"""The two scores that roll a policy out (``cupid``, ``demo-score``) on a robomimic file that names its environment:
a Meta-World operators file (``make-dataset metaworld --format robomimic``), whose ``env_args`` the reader turns into
the environment the rollouts run in (issue 53: every score through a robomimic file)."""

from __future__ import annotations

import csv
import json
import math

import pytest

pytest.importorskip("metaworld", reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1): today's stack only")
pytest.importorskip("h5py", reason="robomimic files need h5py (the datasets extra)")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets.sources.metaworld import write_metaworld_datasets  # noqa: E402

#: small enough to be quick, large enough that some rollouts on reach succeed and others fail (demo-score needs both)
FLAGS = ["--policy-steps", "300", "--cupid-rollouts", "4", "--cupid-projection-dim", "32", "--demo-score-steps", "300",
         "--demo-score-rollouts", "4", "--demo-score-epochs", "5", "--no-progress"]


@pytest.fixture(scope="module")
def reach_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("reach")
    return write_metaworld_datasets(root, "reach", 10, 3, max_steps=60, operators="careful:0.5,hasty:0.5",
                                    file_format="robomimic")["reach-v3"]


def test_rank_compares_both_environment_scores_on_the_files_environment(reach_file, tmp_path, capsys):
    out = tmp_path / "compare"
    assert main(["rank", "--dataset", str(reach_file), "--compare", "cupid,demo-score", "--label", "worse",
                 *FLAGS, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "demo-score: checkpoint 3 of 3: 4 rollouts" in printed  # rolled out, in the file's environment
    report = json.loads((out / "compare.json").read_text())
    assert report["format"] == "robomimic" and report["label_true"] == 5
    assert list(report["scores"]) == ["length", "cupid", "demo-score"]
    for name in ("cupid", "demo-score"):
        row = report["scores"][name]
        assert all(math.isfinite(row[key]) for key in ("auroc", "spearman_length", "kept_overlap_length", "seconds"))
        assert 0 <= row["auroc"] <= 1
    assert len(list((out / "teachers").glob("demo-score-*.npz"))) == 1
    assert len(list((out / "teachers").glob("cupid-*.npz"))) == 1


def test_cupid_centred_weights_on_rollouts_that_report_success(reach_file, tmp_path, capsys):
    scores = {}
    for weights in ("success", "centred"):
        out = tmp_path / weights
        assert main(["rank", "--dataset", str(reach_file), "--score", "cupid", "--cupid-weights", weights, *FLAGS,
                     "--out", str(out)]) == 0
        assert f"rollouts weighted by {'centred success' if weights == 'centred' else 'success'}," in \
            capsys.readouterr().out
        with open(out / "scores.csv", newline="") as stream:
            scores[weights] = [float(row["score"]) for row in csv.DictReader(stream)]
    assert scores["centred"] != scores["success"]


@pytest.mark.slow
def test_dataset_bc_selects_by_each_environment_score(reach_file, tmp_path):
    for score in ("cupid", "demo-score"):
        out = tmp_path / score
        assert main(["dataset-bc", "--dataset", str(reach_file), "--task-difficulty", score, "--curricula",
                     "Agn,Cur-T@select", "--runs", "1", "--max-batches", "4", "--eval-every", "2", "--eval-episodes",
                     "2", "--backend", "serial", "--no-figures", *FLAGS, "--out", str(out)]) == 0
        cell = json.loads((out / "sweep.json").read_text())["cells"]["Cur-T+select"]
        assert cell["task"] == score
        runs = sorted((out / "runs" / "Cur-T+select").glob("run_*.json"))
        assert len(runs) == 1
