"""A report of saved runs reads no artifact: a folder whose model weights are kept out of the repository (the
committed results, docs/results/MANIFEST.weights.json) is reported all the same; computing still wants them."""

from dataclasses import dataclass

import numpy as np

from curteach_teaching.sweeps.results import RunResult, load_run, run_path, save_run
from curteach_teaching.sweeps.sweep import run_sweep


@dataclass(frozen=True)
class WithWeights:
    """Two cells; each run returns its curve and a binary artifact standing in for a model's state_dict."""

    cells: tuple = ("Agn", "Cur")

    def settings(self) -> dict:
        return {"experiment": "with-weights"}

    def run_cell(self, cell, index, seed_sequence):
        curve = np.random.default_rng(seed_sequence).normal(size=3) + (cell == "Cur")
        return RunResult(index=index, seed=0, cell=cell, curves={"x": curve}, artifacts={"model.pt": curve.tobytes()})


def test_load_run_without_artifacts(tmp_path):
    result = RunResult(index=0, seed=0, curves={"x": np.arange(3.0)}, cell="Agn", artifacts={"model.pt": b"\x01\x02"})
    path = run_path(tmp_path, 0, "Agn")
    path.parent.mkdir(parents=True)
    save_run(path, result, "f")
    path.with_suffix(".model.pt").unlink()
    assert load_run(path, "f", 0, "Agn") == (None, "artifact 'model.pt' is missing")
    loaded, reason = load_run(path, "f", 0, "Agn", artifacts=False)
    assert reason == "" and loaded.artifacts == {} and loaded.to_data()["curves"] == result.to_data()["curves"]
    assert loaded.to_data()["artifacts"] == {}  # the run file still holds the digest; the result holds no bytes
    path.with_suffix(".model.pt").write_bytes(b"other")  # a different file is not read either
    assert load_run(path, "f", 0, "Agn", artifacts=False)[1] == ""


def test_report_only_reports_a_folder_without_its_weights_and_computing_recomputes_them(tmp_path):
    first = run_sweep(WithWeights(), tmp_path, 2, seed=0, workers=1, progress=False)
    for weights in tmp_path.glob("runs/*/run_*.model.pt"):
        weights.unlink()
    report = run_sweep(WithWeights(), tmp_path, 2, seed=0, workers=1, progress=False, compute=False)
    assert sorted(report.reused) == sorted(first.computed) and report.invalid == {}
    for cell, runs in report.cells.items():
        for mine, theirs in zip(runs, first.cells[cell], strict=True):
            np.testing.assert_array_equal(mine.curves["x"], theirs.curves["x"])
    assert not list(tmp_path.glob("runs/*/run_*.model.pt"))  # a report writes nothing
    again = run_sweep(WithWeights(), tmp_path, 2, seed=0, workers=1, progress=False)
    assert len(again.computed) == 4 and all("missing" in why for why in again.invalid.values())
    assert len(list(tmp_path.glob("runs/*/run_*.model.pt"))) == 4
