"""dataset-bc's --paired-against: further cells that every other is compared with, run by run, as with Agn (a
length-only control beside the baseline); a report option, so --report-only adds it to a finished sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.commands.dataset_bc import further_baselines  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402

DATASET = "test/cartpole-scripted-v0"
QUICK = ["--max-batches", "10", "--eval-every", "5", "--eval-episodes", "1", "--backend", "serial", "--no-progress",
         "--no-figures", "--task-difficulty", "return", "--seed", "0"]


def test_names_as_in_curricula_or_as_the_cell():
    experiment = DatasetBCExperiment(curricula=("Agn", "Cur", "Cur-T@select", "Cur-T@select/length"),
                                     task_difficulty="return")
    assert further_baselines(None, experiment) == ()
    assert further_baselines("Cur-T@select/length, Cur-T+select,Cur-T+select+length", experiment) == (
        "Cur-T+select+length", "Cur-T+select")
    with pytest.raises(ValueError, match=r"names 'Cur-L', which is not a cell of this sweep \(Agn, Cur, "):
        further_baselines("Cur-L", experiment)
    with pytest.raises(ValueError, match="names Agn, which every cell is compared with already"):
        further_baselines("Agn", experiment)


def test_report_only_adds_the_comparison_to_a_finished_sweep(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur,Cur-L", *QUICK, "--runs", "2",
            "--out", str(out)]
    assert main(args) == 0
    assert "paired_against" not in json.loads((out / "report.json").read_text())
    capsys.readouterr()
    assert main([*args, "--report-only", "--paired-against", "Cur-L"]) == 0
    printed = capsys.readouterr().out
    assert "4 runs" not in printed and "paired against Cur-L" in printed
    report = json.loads((out / "report.json").read_text())
    against = report["paired_against"]["Cur-L"]["statistics"]
    assert list(against) == ["Agn", "Cur"]
    # the difference is that of the saved runs' final test returns, pair by pair
    finals = {cell: [json.loads((out / "runs" / cell / f"run_0000{i}.json").read_text())["data"]["curves"]["return"][-1]
                     for i in range(2)] for cell in ("Cur", "Cur-L")}
    assert against["Cur"]["final"]["mean_difference"] == pytest.approx(
        float(np.mean(np.subtract(finals["Cur"], finals["Cur-L"]))))
    assert main([*args, "--report-only", "--paired-against", "Cur-T"]) == 2
    assert "--paired-against names 'Cur-T', which is not a cell of this sweep (Agn, Cur, Cur-L)" in \
        capsys.readouterr().err
