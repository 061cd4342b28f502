"""``curteach rank --compare``: scores side by side on a robomimic file and a LeRobot folder written by the tests,
nothing written into the dataset, and bad input refused in one line before anything fits."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("pyarrow")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets.compare import auroc  # noqa: E402

KEYS = "object,robot0_eef_pos"
ROW = ["auroc", "spearman_length", "kept_overlap_length", "seconds", "residual_auroc", "residual_spearman_length"]


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(12, seed=4)


def test_compare_on_a_robomimic_file(robot_files, tmp_path, episodes, capsys):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    digest = sha256(path)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--compare", "length,ensemble", "--label", "worse",
                 "--ensemble-batches", "30", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert sha256(path) == digest  # nothing written into the dataset
    report = json.loads((out / "compare.json").read_text())
    assert list(report["scores"]) == ["length", "ensemble"]
    assert report["keep"] == 0.5 and report["label"] == "worse" and report["episodes"] == 12
    assert report["label_true"] == sum(ep["quality"] == "worse" for ep in episodes)
    assert report["trained"]["ensemble"]["batches"] == 30
    for row in report["scores"].values():
        assert list(row) == ROW
    length = report["scores"]["length"]
    assert length["spearman_length"] == pytest.approx(1.0) and length["kept_overlap_length"] == 1.0
    assert length["residual_auroc"] == 0.5  # length has nothing beyond length
    lengths = [len(ep["actions"]) for ep in episodes]
    assert length["auroc"] == pytest.approx(auroc(lengths, [ep["quality"] == "worse" for ep in episodes]))
    ensemble = report["scores"]["ensemble"]
    assert ensemble["seconds"] > 0 and 0 <= ensemble["auroc"] <= 1 and 0 < ensemble["kept_overlap_length"] <= 1
    assert (out / "compare.png").stat().st_size > 0 and (out / "teachers").is_dir()
    assert "resid_AUROC" in printed and "a label true for good episodes reads below 0.5" in printed
    assert any(line.split()[:1] == ["ensemble"] for line in printed.splitlines())
    # again, with the good episodes' key: the ensemble is read from the cache, and length's AUROC turns over
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--compare", "ensemble", "--label", "better",
                 "--ensemble-batches", "30", "--out", str(out)]) == 0
    better = json.loads((out / "compare.json").read_text())["scores"]
    assert better["ensemble"]["spearman_length"] == pytest.approx(ensemble["spearman_length"])
    assert better["length"]["auroc"] == pytest.approx(auroc(lengths, [ep["quality"] == "better" for ep in episodes]))


def test_compare_on_a_lerobot_folder_within_groups(robot_files, tmp_path, episodes, capsys):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes)
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(root), "--compare", "return,length", "--keep", "0.4", "--per-group",
                 "--out", str(out)]) == 0
    report = json.loads((out / "compare.json").read_text())
    assert list(report["scores"]) == ["length", "return"] and report["per_group"] and report["label"] is None
    assert report["scores"]["length"]["kept_overlap_length"] == 1.0
    assert all(row["auroc"] is None and row["residual_auroc"] is None for row in report["scores"].values())
    assert not (out / "episodes.json").exists()  # no kept share written
    assert "AUROC: the chance" not in capsys.readouterr().out


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("curteach rank: error: ")
    return err


def test_bad_input_is_one_line_before_anything_fits(robot_files, tmp_path, episodes, capsys, monkeypatch):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    from curteach_teaching.datasets.scores.ensemble import EnsembleScore

    def no_fit(*_, **__):
        raise AssertionError("a score was fitted before the input was checked")

    monkeypatch.setattr(EnsembleScore, "fit", no_fit)
    base = ["rank", "--dataset", str(path), "--obs-keys", KEYS, "--out", str(tmp_path / "out")]
    assert "no task score 'ensembel' (did you mean 'ensemble'?)" in _one_line_error(
        capsys, [*base, "--compare", "ensemble,ensembel"])
    assert "--label must be a boolean metadata field (True or False in every episode); 'num_samples' is" in \
        _one_line_error(capsys, [*base, "--compare", "ensemble", "--label", "num_samples"])
    assert "--label must be a boolean metadata field of every episode; 'cleaner' is not in that of episode 0" in \
        _one_line_error(capsys, [*base, "--compare", "ensemble", "--label", "not:cleaner"])
    assert "--label names the field --compare measures each score against: give --compare too" in _one_line_error(
        capsys, [*base, "--label", "worse"])
    assert "--compare writes nothing into the dataset; drop --filter-key, --in-place" in _one_line_error(
        capsys, [*base, "--compare", "length", "--keep", "0.5", "--filter-key", "k", "--in-place"])
    assert "--compare must name at least one score" in _one_line_error(capsys, [*base, "--compare", " , "])
    assert "--keep must be a fraction in (0, 1]" in _one_line_error(capsys, [*base, "--compare", "length",
                                                                            "--keep", "1.5"])
    assert "--ensemble-size must be" in _one_line_error(capsys, [*base, "--compare", "ensemble",
                                                                "--ensemble-size", "0"])
    assert not (tmp_path / "out").exists()
    with h5py.File(path, "r") as f:
        assert sorted(f["mask"]) == ["better", "okay", "train", "valid", "worse"]
