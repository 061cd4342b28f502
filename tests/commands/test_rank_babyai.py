"""``curteach rank`` on a BabyAI dataset made by ``make-dataset babyai``: its missions are text, so the trained
score's policy is checked on the codec's space (token ids), not the raw one; and ``--device``."""

from __future__ import annotations

import csv
import json

import pytest

pytest.importorskip("minigrid")
pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets.sources.babyai import dataset_id, write_babyai_datasets  # noqa: E402
from curteach_teaching.datasets.sources.babyai_bot import resolve_levels  # noqa: E402

LEVEL = "GoToRedBallGrey"


@pytest.fixture(scope="module")
def babyai_dataset(tmp_path_factory):
    """Six bot episodes of one level (as ``make-dataset babyai --levels GoToRedBallGrey --episodes 6 --seed 1``)."""
    root = tmp_path_factory.mktemp("babyai")
    write_babyai_datasets(root, (LEVEL,), 6, seed=1, progress=False)
    return str(root / dataset_id(resolve_levels(LEVEL)[0]))


def _rows(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


def test_rank_ranks_a_babyai_dataset_by_the_ensemble(babyai_dataset, tmp_path, capsys):
    out = tmp_path / "rank"
    assert main(["rank", "--dataset", babyai_dataset, "--ensemble-size", "2", "--ensemble-batches", "3",
                 "--device", "cpu", "--no-progress", "--out", str(out)]) == 0
    rows = _rows(out / "scores.csv")
    assert len(rows) == 6 and len({row["score"] for row in rows}) > 1  # fitted: the episodes are told apart
    report = json.loads((out / "rank.json").read_text())
    assert report["ensemble"]["size"] == 2 and report["ensemble"]["batches"] == 3
    assert "ensemble teacher ready" in capsys.readouterr().out


def test_rank_ranks_a_babyai_dataset_by_a_plain_score(babyai_dataset, tmp_path):
    out = tmp_path / "rank"
    assert main(["rank", "--dataset", babyai_dataset, "--score", "length", "--no-progress", "--out", str(out)]) == 0
    report = json.loads((out / "rank.json").read_text())
    assert report["ensemble"] is None and len(_rows(out / "scores.csv")) == 6


def test_device_cuda_without_a_gpu_is_one_line_before_any_reading(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    out = tmp_path / "rank"
    assert main(["rank", "--dataset", str(tmp_path / "nothing.hdf5"), "--device", "cuda", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torch sees no GPU" in err and not out.exists()
