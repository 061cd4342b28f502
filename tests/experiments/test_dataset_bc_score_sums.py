"""A cell that reads a weighted sum of task scores (``ensemble+100*flags:noisy``, a user's 0/1 flag of the noisy
episodes: the ensemble's ranking with every noisy episode last): the ensemble is fitted once for every cell that
reads it, the sum is combined from its values as the docstring's formula says, and the select run trained on exactly
the episodes that formula ranks first."""

from __future__ import annotations

import csv
import json
import sys
import types

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402

MIXED = "test/cartpole-mixed-v0"
NOISY = [2, 5, 8, 11]  # as the mixed_root fixture writes them: a third of the 12 episodes
QUICK = ["--runs", "1", "--max-batches", "10", "--eval-every", "10", "--eval-episodes", "1", "--ensemble-batches",
         "20", "--ensemble-size", "2", "--backend", "serial", "--no-progress", "--no-figures"]
SUM = "Cur-T+select+ensemble+100.flags.noisy"  # the cell's name: ':' and '*' are not a folder's characters


def test_a_sum_with_the_ensemble_selects_as_its_formula_says(mixed_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(mixed_root))
    flags = types.ModuleType("flags")  # the dataset records no flag: a user's function gives it
    flags.noisy = lambda pool: np.isin(np.asarray(pool.episode_ids), NOISY).astype(float)
    monkeypatch.setitem(sys.modules, "flags", flags)
    out = tmp_path / "sums"
    cells = "Agn,Cur-T@select/ensemble,Cur-T@select/ensemble+100*not:clean"
    args = ["dataset-bc", "--dataset", MIXED, "--curricula", cells, "--keep", "0.5", *QUICK, "--out", str(out)]
    # 'clean' is no field of the dataset: refused in one line before the ensemble trains
    assert main(args) == 2
    assert "no episode has a field 'clean'" in capsys.readouterr().err
    assert not (out / "teachers").exists()

    args[args.index(cells)] = cells.replace("not:clean", "flags:noisy")
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.count("ensemble teacher ready (fitted in") == 1  # one fit for both cells that read it
    (cache,) = (out / "teachers").glob("ensemble-*.npz")
    with np.load(cache) as saved:
        ensemble = np.array(saved["difficulty"])
    noisy = np.isin(np.arange(12), NOISY)
    # the docstring's formula by hand: z(ensemble) + 100 z(noisy); a third noisy: sqrt(2) and -1/sqrt(2) std devs
    by_hand = (ensemble - ensemble.mean()) / ensemble.std() + 100 * np.where(noisy, np.sqrt(2), -1 / np.sqrt(2))
    experiment = DatasetBCExperiment(curricula=("Cur-T@select/ensemble+100*flags:noisy",), ensemble_size=2,
                                     ensemble_batches=20, max_batches=10)
    data = experiment.prepare(read_pool(MIXED)).fit(teacher_cache=str(out / "teachers")).data
    np.testing.assert_allclose(data.task_scores["ensemble+100*flags:noisy"], by_hand, rtol=1e-12)

    with open(out / "selection.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    kept = {cell: sorted(int(r["episode_id"]) for r in rows if r["curriculum"] == cell and r["weight"] == "1"
                         and r["epoch"] == "1") for cell in ("Cur-T+select+ensemble", SUM)}
    assert kept["Cur-T+select+ensemble"] == sorted(np.argsort(ensemble, kind="stable")[:6].tolist())
    assert kept[SUM] == sorted(np.argsort(by_hand, kind="stable")[:6].tolist())
    assert not set(kept[SUM]) & set(NOISY)  # every noisy episode last: 8 clean ones to choose 6 from
    report = json.loads((out / "report.json").read_text())
    assert report["cell_settings"][SUM]["task"] == "ensemble+100*flags:noisy"
    assert report["cell_settings"][SUM]["ensemble_size"] == 2  # it reads the ensemble: its settings are the cell's
