"""dataset-bc's cells say what they do (issue 43, frictions): a cell that takes ``--use select`` from the sweep is
named ``Cur+select`` in the printed lines, the legends and its folder (an older folder, whose runs are under ``Cur``,
is renamed and resumes), and the selection-quality line says which epoch its dropped episodes are from; a flag that no
cell reads is left out of the settings, so changing it does not make the folder another sweep's."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402
from curteach_teaching.experiments.dataset_bc.report import DatasetBCReport  # noqa: E402

DATASET = "test/cartpole-scripted-v0"
QUICK = ["--runs", "1", "--max-batches", "10", "--eval-every", "10", "--eval-episodes", "1", "--backend", "serial",
         "--no-progress", "--no-figures"]


def test_a_cell_is_named_with_the_use_it_takes_from_the_sweep():
    experiment = DatasetBCExperiment(curricula=("Agn", "Cur", "Cur-T/return", "Cur-L@order"), use="select")
    assert experiment.cells == ("Agn", "Cur+select", "Cur-T+select+return", "Cur-L+order")
    assert experiment.renamed_cells() == {"Cur": "Cur+select", "Cur-T+return": "Cur-T+select+return"}
    assert experiment.cell_spec("Cur+select").use == "select" and experiment.cell_spec("Cur-L+order").use == "order"
    # with the default use nothing is renamed: the cells of every sweep so far keep their names
    assert DatasetBCExperiment(curricula=("Agn", "Cur", "Cur@weight")).cells == ("Agn", "Cur", "Cur+weight")
    with pytest.raises(ValueError, match=r"'Cur' and 'Cur@select' are the same \(use select, task score length\)"):
        DatasetBCExperiment(curricula=("Agn", "Cur", "Cur@select"), use="select")


def test_the_dropped_episodes_line_names_its_epoch(capsys):
    from imitation.data.types import TrajectoryWithRew

    from curteach_teaching.datasets import EpisodePool

    trajectories = [TrajectoryWithRew(obs=np.zeros((3, 1), np.float32), acts=np.zeros(2, np.int64), infos=None,
                                      terminal=True, rews=np.ones(2)) for _ in range(4)]
    pool = EpisodePool.from_trajectories(trajectories, gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(2),
                                         metadata=[{"noisy": i % 2 == 0} for i in range(4)])
    experiment = DatasetBCExperiment(curricula=("Agn", "Cur", "Cur@select"))
    report = DatasetBCReport(experiment, pool, success=False)
    final = {"batches": 10, "n": 2, "mean": 1.0}
    quality = {"field": "noisy", "bad_share": 0.5,
               "cells": {"Cur": {"dropped": 2.0, "dropped_bad_share": 1.0, "kept_bad_share": 0.0},
                         "Cur+select": {"dropped": 1.0, "dropped_bad_share": 0.5, "kept_bad_share": 0.25}}}
    report.print_summary(None, {"final": {"Agn": final, "Cur": final, "Cur+select": final},
                                "selection_quality": quality}, None)
    printed = capsys.readouterr().out.splitlines()
    assert printed[3:] == [
        "bad episodes (noisy): 50% of the pool",
        "  Cur: 100% of the 2 episodes it drops in its first epoch are bad; 0% of those it keeps",
        "  Cur+select: 50% of the 1 episodes it drops in its last epoch are bad; 25% of those it keeps"]


def test_use_select_names_the_cell_and_an_older_folder_resumes(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur", "--use", "select", *QUICK,
            "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "Cur+select after 10 batches (n=1)" in printed and "\nCur after" not in printed
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["Agn", "Cur+select"]
    summary = (out / "summary.csv").read_text()
    assert "\nCur+select,select,length," in summary
    # the folder as the version before wrote it: the cell named Cur, its run file saying so
    new = out / "runs" / "Cur+select" / "run_00000.json"
    document = json.loads(new.read_text())
    data = {**document["data"], "cell": "Cur"}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()
    (out / "runs" / "Cur").mkdir()
    (out / "runs" / "Cur" / "run_00000.json").write_text(json.dumps(
        {**document, "data": data, "checksum": hashlib.sha256(canonical).hexdigest()}))
    new.unlink()
    new.parent.rmdir()
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"renamed the cells of {out} that take --use select to say so: Cur -> Cur+select (1 run files)" in printed
    assert "2 runs (0 computed, 2 reused)" in printed
    assert json.loads(new.read_text()) == document  # the run file this version writes
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["Agn", "Cur+select"]
    assert (out / "summary.csv").read_text() == summary


def test_settings_no_cell_reads_are_left_out():
    def settings(**kwargs):
        return DatasetBCExperiment(digest="d", **kwargs).settings()

    plain = settings(curricula=("Agn", "Cur"))
    assert settings(curricula=("Agn", "Cur"), keep=0.3, temperature=2.0, ensemble_size=3, teacher_seed=4) == plain
    assert "keep" not in plain and settings(curricula=("Agn", "Cur@select"), keep=0.3)["keep"] == 0.3
    assert settings(curricula=("Agn", "Cur@weight"), temperature=2.0)["temperature"] == 2.0
    assert settings(curricula=("Agn", "Cur/ensemble"), teacher_seed=4)["teacher_seed"] == 4
    # every cell names its own task score and use: the sweep's are read by none
    own = settings(curricula=("Agn", "Cur-T@select/return"), task_difficulty="level", use="weight", keep=0.5)
    assert "task_difficulty" not in own and "use" not in own and own["keep"] == 0.5
    assert plain["task_difficulty"] == "length" and "learner_term" in own and "pacing_a" in own  # always kept


def test_a_flag_no_cell_reads_does_not_change_the_sweep(cartpole_root, tmp_path, monkeypatch, capsys):
    from curteach_teaching.sweeps.results import fingerprint

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur", *QUICK, "--out", str(out)]
    assert main([*args, "--keep", "0.5"]) == 0
    capsys.readouterr()
    assert main([*args, "--keep", "0.9", "--temperature", "3"]) == 0  # before: refused, another sweep's folder
    assert "2 runs (0 computed, 2 reused)" in capsys.readouterr().out
    # a folder of the version before, which recorded --keep 0.5 although no cell selects: upgraded, then resumed
    record = json.loads((out / "sweep.json").read_text())
    old = {**record["settings"], "keep": 0.5}
    (out / "sweep.json").write_text(json.dumps({**record, "settings": old}))
    for path in (out / "runs").glob("*/run_*.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "fingerprint": fingerprint(old)}))
    assert main([*args, "--keep", "0.7"]) == 0
    printed = capsys.readouterr().out
    assert f"upgraded {out}: settings no cell reads are left out of them (keep) (2 run files re-keyed)" in printed
    assert "2 runs (0 computed, 2 reused)" in printed
    assert json.loads((out / "sweep.json").read_text()) == record
