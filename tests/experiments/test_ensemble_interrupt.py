"""Ctrl-C while dataset-bc fits its ensemble teacher prints one line, as during the runs, and exits 130."""

import pytest

pytest.importorskip("minari")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402

DATASET = "test/cartpole-scripted-v0"


def test_ctrl_c_during_the_ensemble_fit_says_what_was_kept(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    scores = DatasetBCExperiment.teacher_scores

    def pressed(self, pool, task, *args, **kwargs):  # Ctrl-C arrives in the middle of the ensemble's fit
        if task == "ensemble":
            raise KeyboardInterrupt
        return scores(self, pool, task, *args, **kwargs)

    monkeypatch.setattr(DatasetBCExperiment, "teacher_scores", pressed)
    out = tmp_path / "out"
    code = main(["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur-T", "--task-difficulty", "ensemble",
                 "--runs", "2", "--max-batches", "20", "--eval-every", "10", "--eval-episodes", "2", "--backend",
                 "serial", "--no-progress", "--no-figures", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 130
    lines = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert lines == [f"interrupted: the ensemble teacher was not fitted, no run has started and nothing was cached in "
                     f"{out / 'teachers'}; run the same command again to fit it"]
    assert "Traceback" not in err
    assert not list(out.glob("teachers/ensemble-*.npz"))
