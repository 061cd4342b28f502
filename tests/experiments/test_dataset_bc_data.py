"""dataset-bc's data flow: the driver reads the pool once and prepares everything a run reads (the codec, the encoded
trajectories, every task score, the fitted ensemble); runs get the data, not paths, and write nothing; the settings
name the data by its digest, so a moved dataset resumes, and older folders (the committed ones) are upgraded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.datasets.prepared import pool_digest  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATASET = "test/cartpole-scripted-v0"


def scripted_cartpole(root, n_episodes, seed0=100, noisy=(), horizon=120, dataset=DATASET):
    """The example's scripted CartPole dataset (examples/datasets/scripted_cartpole.py), as the conftest writes it."""
    import sys
    import warnings

    sys.path.insert(0, str(ROOT / "examples" / "datasets"))
    try:
        from scripted_cartpole import make_dataset
    finally:
        sys.path.pop(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari's notes on the dataset's metadata
        make_dataset(str(root), episodes=n_episodes, seed=seed0, dataset_id=dataset, noisy=noisy, horizon=horizon)
SMALL = dict(max_batches=20, eval_every=10, eval_episodes=2, batch_size=32, sampled=False)


def test_a_prepared_experiment_runs_without_its_dataset_and_writes_nothing(tmp_path, monkeypatch):
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    scripted_cartpole(root, n_episodes=4, noisy=(3,), horizon=40)
    pool = read_pool(DATASET)
    experiment = DatasetBCExperiment(curricula=("Agn", "Cur-T@select/return", "Cur"), task_difficulty="ensemble",
                                     ensemble_size=2, ensemble_batches=5, **SMALL)
    with pytest.raises(ValueError, match=r"^prepare\(pool\) the experiment"):
        experiment.run_cell("Agn", 0, np.random.SeedSequence([0, 0]))
    prepared = experiment.prepare(pool)
    assert prepared.digest == pool_digest(pool) and experiment.digest == ""
    np.testing.assert_array_equal(prepared.data.task_scores["return"], -pool.returns)  # computed once, here
    assert prepared.unfitted() == ["ensemble"]
    with pytest.raises(ValueError, match="fit"):
        prepared.run_cell("Cur", 0, np.random.SeedSequence([0, 0]))
    cache = tmp_path / "teachers"
    said = []
    fitted = prepared.fit(teacher_cache=str(cache), say=said.append)
    assert said[0] == f"ensemble teacher: 2 BC policies x 5 steps (cached in {cache})"
    assert said[1].startswith("ensemble teacher ready (fitted in ")
    [cached] = cache.glob("ensemble-*.npz")
    with np.load(cached) as saved:
        np.testing.assert_array_equal(fitted.data.task_scores["ensemble"], saved["difficulty"])
    again = prepared.fit(teacher_cache=str(cache), say=said.append)
    assert said[-1] == "ensemble teacher ready (read from the cache)"
    np.testing.assert_array_equal(again.data.task_scores["ensemble"], fitted.data.task_scores["ensemble"])
    # the workers' side: no dataset on disk, no cache, and nothing written anywhere
    shutil.rmtree(root)
    shutil.rmtree(cache)
    before = sorted(tmp_path.rglob("*"))
    result = fitted.run_cell("Cur-T+select+return", 0, np.random.SeedSequence([0, 0]))
    assert result.extras["task"] == "return" and result.curves["return"].shape == (3,)
    assert fitted.run_cell("Cur", 0, np.random.SeedSequence([0, 0])).extras["task"] == "ensemble"
    assert sorted(tmp_path.rglob("*")) == before
    # what a process pool or Ray sends a worker: the pickled experiment, data included, gives the same run
    import pickle

    copy = pickle.loads(pickle.dumps(fitted))
    again = copy.run_cell("Cur-T+select+return", 0, np.random.SeedSequence([0, 0]))
    assert json.dumps(again.to_data()) == json.dumps(result.to_data())  # NaN never equals itself: compare text


def test_the_settings_name_the_data_by_its_digest(tmp_path, monkeypatch):
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    scripted_cartpole(root, n_episodes=3, horizon=30)
    pool = read_pool(DATASET)
    settings = DatasetBCExperiment(**SMALL).prepare(pool).settings()
    assert settings["digest"] == pool_digest(pool) and "sources" not in settings and "data" not in settings
    with pytest.raises(ValueError, match=r"prepare\(pool\) the experiment first"):
        DatasetBCExperiment(**SMALL).settings()  # no digest: a sweep of it would not know its data
    other = DatasetBCExperiment(digest="0" * 64, **SMALL)
    with pytest.raises(ValueError, match="its digest differs"):
        other.prepare(pool)


def test_a_moved_dataset_resumes(tmp_path, monkeypatch, capsys):
    first = tmp_path / "here"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(first))
    scripted_cartpole(first, n_episodes=3, horizon=30)
    out = tmp_path / "out"
    quick = ["--curricula", "Agn,Cur", "--task-difficulty", "return", "--runs", "1", "--max-batches", "10",
             "--eval-every", "10", "--eval-episodes", "2", "--no-sampled", "--backend", "serial", "--no-progress",
             "--no-figures", "--out", str(out)]
    assert main(["dataset-bc", "--dataset", str(first / DATASET), *quick]) == 0
    moved = tmp_path / "elsewhere" / "cartpole"
    shutil.move(str(first / DATASET), str(moved))
    capsys.readouterr()
    assert main(["dataset-bc", "--dataset", str(moved), *quick]) == 0
    assert "2 runs (0 computed, 2 reused)" in capsys.readouterr().out


def test_the_committed_cartpole_folder_is_upgraded_and_reports_the_same(tmp_path, monkeypatch, capsys):
    """docs/results/dataset-bc-cartpole was written when the settings held the datasets' ids and the digest covered
    the actions and rewards only: its report of the saved runs upgrades it in place (both), gives the committed
    summary byte for byte, and a rerun computes nothing."""
    committed = ROOT / "docs" / "results" / "dataset-bc-cartpole"
    assert "sources" in json.loads((committed / "sweep.json").read_text())["settings"]
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    scripted_cartpole(root, n_episodes=30, seed0=1000, noisy=range(10), horizon=None, dataset="cartpole/scripted-v0")
    out = tmp_path / "cartpole"
    shutil.copytree(committed, out)
    argv = ["dataset-bc", "--dataset", "cartpole/scripted-v0", "--curricula", "Agn,Cur", "--task-difficulty",
            "return", "--runs", "2", "--max-batches", "1500", "--no-figures", "--no-progress", "--out", str(out)]
    assert main([*argv, "--report-only"]) == 0
    printed = capsys.readouterr().out
    assert "(4 run files re-keyed)" in printed and "report of the 4 of 4 runs saved so far" in printed
    assert "the data's digest now covers its observations, metadata and step infos" in printed  # then the digest's
    assert (out / "summary.csv").read_bytes() == (committed / "summary.csv").read_bytes()
    report, old = (json.loads((folder / "report.json").read_text()) for folder in (out, committed))
    assert report["final"] == old["final"]
    mine, theirs = report["paired"]["statistics"]["Cur"], old["paired"]["statistics"]["Cur"]
    # the committed report predates the per-point scalars (return@250, ...) and the notes on what few pairs can show
    # (wilcoxon_note, detectable_difference); every number it holds is the same
    def numbers(stats):
        if isinstance(stats, dict):
            return {k: numbers(v) for k, v in stats.items()
                    if k not in ("scalars", "wilcoxon_note", "detectable_difference")}
        return stats

    assert numbers(mine) == numbers(theirs)
    assert "sources" not in json.loads((out / "sweep.json").read_text())["settings"]
    for path in sorted((committed / "runs").rglob("run_*.json")):  # the runs' data untouched, only re-keyed
        new = json.loads((out / path.relative_to(committed)).read_text())
        assert new["data"] == json.loads(path.read_text())["data"]
    assert main(argv) == 0
    assert "4 runs (0 computed, 4 reused)" in capsys.readouterr().out


def test_ctrl_c_during_the_ensemble_fit_says_so(tmp_path, monkeypatch, capsys):
    from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher

    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    scripted_cartpole(root, n_episodes=3, horizon=30)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as a Ctrl-C while a member trains

    monkeypatch.setattr(EnsembleTeacher, "scores", interrupted)
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur", "--task-difficulty", "ensemble",
                 "--runs", "1", "--no-progress", "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip() == ("interrupted while fitting the trained task scores; nothing of them is "
                                               "saved (run the same command again)")
    assert not list((out / "runs").rglob("run_*.json")) and not (out / "teachers").exists()


def test_only_a_folder_of_the_recorded_sweep_and_seed_is_upgraded(tmp_path):
    """A whole-sweep record (with ``sources``) is upgraded to per-cell settings when its seed is the command's; only
    the intact run files of its fingerprint are re-keyed, the others are left for the sweep to recompute; a record
    of a setting this version does not know describes no sweep, and is left to the sweep to refuse."""
    from curteach_teaching.experiments.dataset_bc.migrate import upgrade_folder
    from curteach_teaching.sweeps.results import RunResult, fingerprint, load_run, save_run
    from curteach_teaching.sweeps.sweep import cell_fingerprints

    experiment = DatasetBCExperiment(digest="d" * 64, curricula=("Agn", "Cur"), **SMALL)
    settings = json.loads(json.dumps(experiment.settings()))
    old = {"sources": ["somewhere/on-disk"], **settings, "curricula": ["Agn", "Cur"], "task_difficulty": "length"}
    result = RunResult(index=0, seed=0, cell="Agn", curves={"return": np.array([1.0, float("nan")])})
    for folder, recorded in (("same", old), ("unknown", {**old, "later_flag": 3})):
        save_run(tmp_path / folder / "runs" / "Agn" / "run_00000.json", result, fingerprint(recorded))
        save_run(tmp_path / folder / "runs" / "Agn" / "run_00001.json", RunResult(**{**vars(result), "index": 1}),
                 fingerprint({**recorded, "max_batches": 99}))  # a run of other settings
        (tmp_path / folder / "sweep.json").write_text(json.dumps({"format": "curteach-sweep-1", "settings": recorded,
                                                                  "seed": 0, "curteach": "0.1.0"}))
    assert upgrade_folder(tmp_path / "unknown", 0) == []
    assert upgrade_folder(tmp_path / "same", 1) == []  # another seed: left to the sweep to refuse
    [line] = upgrade_folder(tmp_path / "same", 0)
    assert "name the data by its digest, not the datasets' paths" in line and line.endswith("(1 run files re-keyed)")
    record = json.loads((tmp_path / "same" / "sweep.json").read_text())
    assert record["settings"] == settings and list(record["cells"]) == ["Agn", "Cur"]
    runs = tmp_path / "same" / "runs" / "Agn"
    fingerprints = cell_fingerprints(experiment, experiment.settings())
    loaded, reason = load_run(runs / "run_00000.json", fingerprints["Agn"], 0, "Agn")
    assert reason == "" and np.isnan(loaded.curves["return"][1])
    assert load_run(runs / "run_00001.json", fingerprints["Agn"], 1, "Agn")[1] == "written for other settings"
    assert upgrade_folder(tmp_path / "same", 0) == []  # once is enough
    assert upgrade_folder(tmp_path / "nothing", 0) == []
