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
                         "Cur+select": {"dropped": 1.0, "dropped_bad_share": 0.5, "kept_bad_share": 0.25,
                                        "kept_bad_transition_share": 0.4}}}
    report.print_summary(None, {"final": {"Agn": final, "Cur": final, "Cur+select": final},
                                "selection_quality": quality}, None)
    printed = capsys.readouterr().out.splitlines()
    assert printed[3:] == [
        "bad episodes (noisy): 50% of the pool",
        "  Cur: 100% of the 2 episodes it drops in its first epoch are bad; 0% of those it keeps",
        "  Cur+select: 50% of the 1 episodes it drops in its last epoch are bad; 25% of those it keeps (40% of their "
        "transitions)"]


def as_last_version(out, renamed=None, **recorded):
    """Rewrite ``out`` (a folder this version wrote) as the versions before per-cell settings wrote it: one settings
    dict for the whole sweep (the shared settings and ``recorded``, the cells in ``curricula`` and the flags they
    read, as those versions recorded them), every run file fingerprinted by it; ``renamed``: ``{name: older name}``
    of cells whose runs lay under another name."""
    from curteach_teaching.sweeps.results import fingerprint

    record = json.loads((out / "sweep.json").read_text())
    legacy = {**record["settings"], **recorded}
    for path in sorted((out / "runs").glob("*/run_*.json")):
        document = json.loads(path.read_text())
        older = (renamed or {}).get(path.parent.name)
        if older is not None:
            data = {**document["data"], "cell": older}
            canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()
            document = {**document, "data": data, "checksum": hashlib.sha256(canonical).hexdigest()}
            (out / "runs" / older).mkdir(exist_ok=True)
            path.unlink()
            path = out / "runs" / older / path.name
        path.write_text(json.dumps({**document, "fingerprint": fingerprint(legacy)}))
    for folder in (out / "runs").iterdir():
        if not any(folder.iterdir()):
            folder.rmdir()
    (out / "sweep.json").write_text(json.dumps({key: value for key, value in record.items() if key != "cells"}
                                               | {"settings": legacy}))
    return legacy


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
    new = out / "runs" / "Cur+select" / "run_00000.json"
    document = json.loads(new.read_text())
    record = json.loads((out / "sweep.json").read_text())
    # the folder as the versions before wrote it: the cell named Cur, its run file saying so
    # (keep at its default and temperature, read by no cell, were not recorded)
    as_last_version(out, {"Cur+select": "Cur"}, curricula=["Agn", "Cur"], task_difficulty="length", use="select")
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert (f"upgraded {out}: each cell has its own settings now, so cells can be added, dropped or reordered; the "
            "cells that take --use select say so (Cur -> Cur+select: 1 run files) (2 run files re-keyed)") in printed
    assert "2 runs (0 computed, 2 reused)" in printed
    assert json.loads(new.read_text()) == document  # the run file this version writes
    assert json.loads((out / "sweep.json").read_text()) == record
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["Agn", "Cur+select"]
    assert (out / "summary.csv").read_text() == summary


def test_settings_no_cell_reads_are_left_out():
    def settings(**kwargs):
        return DatasetBCExperiment(digest="d", **kwargs).settings()

    def own(cell, **kwargs):
        return DatasetBCExperiment(digest="d", **kwargs).cell_settings(cell)

    plain = settings(curricula=("Agn", "Cur"))
    # the shared settings hold nothing that only some cells read, whatever the cells
    assert settings(curricula=("Cur-T@select/return",), keep=0.3, temperature=2.0, ensemble_size=3, teacher_seed=4,
                    task_difficulty="level", use="weight") == plain
    assert not {"curricula", "task_difficulty", "use", "keep", "temperature", "teacher_seed"} & set(plain)
    assert "learner_term" in plain and "pacing_a" in plain  # a plug-in curriculum may read them: always kept
    assert own("Agn", curricula=("Agn",), task_difficulty="return", keep=0.3) == {
        "curriculum": "Agn", "use": "order", "task": None}
    assert own("Cur+select", curricula=("Agn", "Cur@select"), keep=0.3) == {
        "curriculum": "Cur", "use": "select", "task": "length", "keep": 0.3}
    assert own("Cur", curricula=("Cur",), keep=0.3, temperature=2.0) == {
        "curriculum": "Cur", "use": "order", "task": "length"}
    assert own("Cur+weight", curricula=("Cur@weight",), temperature=2.0)["temperature"] == 2.0
    assert own("Cur-T+ensemble", curricula=("Cur-T/ensemble",), teacher_seed=4, ensemble_size=3) == {
        "curriculum": "Cur-T", "use": "order", "task": "ensemble", "ensemble_size": 3, "ensemble_batches": None,
        "teacher_seed": 4}
    # with a held-out split the sweep's seed splits the pool: every run reads it
    assert settings(curricula=("Agn",), holdout=0.2, teacher_seed=4)["teacher_seed"] == 4


def test_a_flag_no_cell_reads_does_not_change_the_sweep(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur", *QUICK, "--out", str(out)]
    assert main([*args, "--keep", "0.5"]) == 0
    capsys.readouterr()
    assert main([*args, "--keep", "0.9", "--temperature", "3"]) == 0  # before: refused, another sweep's folder
    assert "2 runs (0 computed, 2 reused)" in capsys.readouterr().out
    record = json.loads((out / "sweep.json").read_text())
    # a folder of a version before, which recorded --keep 0.5 although no cell selects: upgraded, then resumed
    as_last_version(out, curricula=["Agn", "Cur"], task_difficulty="length", keep=0.5)
    # the command adds a cell: the folder is upgraded as the sweep it records, then only the new cell computes
    assert main([*args, "--keep", "0.7", "--curricula", "Agn,Cur-L,Cur"]) == 0
    printed = capsys.readouterr().out
    assert (f"upgraded {out}: each cell has its own settings now, so cells can be added, dropped or reordered; "
            "settings no cell reads are left out of them (keep) (2 run files re-keyed)") in printed
    assert "3 runs (1 computed, 2 reused)" in printed
    upgraded = json.loads((out / "sweep.json").read_text())
    assert upgraded["settings"] == record["settings"] and list(upgraded["cells"]) == ["Agn", "Cur", "Cur-L"]


def test_cells_can_be_added_dropped_and_reordered(cartpole_root, tmp_path, monkeypatch, capsys):
    """Issue 43: a sweep accepts new cells beside its saved ones (the same settings otherwise) and computes only
    what is missing; a dropped cell keeps its runs; a cell recorded with other settings is refused, naming it."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"

    def sweep(curricula, *more):
        code = main(["dataset-bc", "--dataset", DATASET, "--curricula", curricula, "--task-difficulty", "return",
                     *QUICK, "--out", str(out), *more])
        return code, capsys.readouterr()

    def saved():
        return {path.relative_to(out).as_posix(): path.read_bytes() for path in sorted(out.glob("runs/*/run_*.json"))}

    assert sweep("Agn,Cur")[0] == 0
    first = saved()
    code, printed = sweep("Cur-T,Agn,Cur")  # a cell added in front, the others moved
    assert code == 0 and "3 runs (1 computed, 2 reused)" in printed.out
    after = saved()
    assert {name: after[name] for name in first} == first and "runs/Cur-T/run_00000.json" in after
    code, printed = sweep("Cur")  # Agn and Cur-T dropped: their runs stay, unreported
    assert code == 0 and "1 run (0 computed, 1 reused)" in printed.out and saved() == after
    assert "Cur-T" not in (out / "summary.csv").read_text()
    record = json.loads((out / "sweep.json").read_text())
    assert sorted(record["cells"]) == ["Agn", "Cur", "Cur-T"] and "curricula" not in record["settings"]
    assert json.loads((out / "report.json").read_text())["cell_settings"] == {
        "Cur": {"curriculum": "Cur", "use": "order", "task": "return"}}
    # Cur with another task score is not Cur's runs: refused in one line, naming the cell; nothing changes
    code, printed = sweep("Agn,Cur,Cur-L", "--task-difficulty", "length")
    assert code == 2 and printed.err.count("\n") == 1
    assert "cell 'Cur': task: 'return' -> 'length'" in printed.err and "Agn" not in printed.err
    assert saved() == after and json.loads((out / "sweep.json").read_text()) == record
    # a setting every run reads still makes another sweep
    code, printed = sweep("Agn", "--batch-size", "16")
    assert code == 2 and "batch_size: 64 -> 16" in printed.err
