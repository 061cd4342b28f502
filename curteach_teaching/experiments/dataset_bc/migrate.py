"""Folders of ``dataset-bc`` written before each cell had its own settings: upgraded in place, once.

Those folders' ``sweep.json`` records one settings dict for the whole sweep, its cells in ``curricula``, and every
run file is fingerprinted by it (the committed ``docs/results/`` folders of CartPole, Pendulum and BabyAI are of this
form). The versions that wrote them differed from this one in three ways, each undone here:

* the settings held ``sources``, the datasets' ids or paths as given, so a moved dataset did not resume; the data is
  now named by its ``digest`` alone (:func:`~curteach_teaching.datasets.prepared.pool_digest`, recorded
  beside ``sources``);
* they recorded settings no cell reads (``--keep`` without a select cell, ``--task-difficulty`` where every cell names
  its own, ...); these are now left out, so such a folder resumes whatever their values;
* a cell that took the sweep's ``--use select`` (or ``weight``) was named as its curriculum (``Cur``); it is now named
  with its use (``Cur+select``), and its runs move to that cell's folder.

:func:`upgrade_folder` builds the experiment the record describes: the settings it names as recorded, those it does
not name at their defaults (a version left a setting out at its default or where no cell read it, so the default
gives the same runs). Every intact run file of the recorded fingerprint and seed is re-keyed to its cell's new
fingerprint (:meth:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment.cell_settings`), its
data as it was (only a renamed cell's ``cell`` and checksum rewritten); a damaged file, or one of other settings, is
left alone and the sweep recomputes it, saying why. Every file is replaced atomically and ``sweep.json`` last, so an
interrupted upgrade is finished by the next command. The upgrade applies to the sweep the folder records, whatever the
command's flags now say (the sweep then compares the two as usual, and refuses a difference with its own message).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from curteach_envs._util import atomic_write
from curteach_teaching.sweeps.folders import RECORD_FORMAT, RECORD_NAME
from curteach_teaching.sweeps.results import fingerprint

__all__ = ["rekey_run_file", "upgrade_folder"]

#: what the whole-sweep settings recorded beside the experiment's settings: its name, and the datasets' paths
_NOT_FIELDS = ("experiment", "sources")
#: the recorded settings every cell's own settings now resolve (a cell's ``use`` and ``task``, ``curricula``)
_RESOLVED = ("curricula", "task_difficulty", "use")


def _canonical(obj) -> bytes:  # as the run files' checksums are computed (sweeps.results)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def rekey_run_file(path: Path, old: str, new: str, cell: str | None = None, target: Path | None = None,
                   renamed: str | None = None) -> bool:
    """Give the run file ``path`` the fingerprint ``new`` when it is intact, of fingerprint ``old`` and (with ``cell``)
    of that cell; written atomically, its data and checksum as they were. With ``target`` and ``renamed``: written
    there as a run of cell ``renamed`` (its checksum recomputed, its artifacts moved beside it), then ``path`` deleted;
    a ``target`` that exists is left as it is. Whether it re-keyed the file."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
        data = document["data"]
        intact = hashlib.sha256(_canonical(data)).hexdigest() == document["checksum"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not intact or document.get("fingerprint") != old or (cell is not None and data.get("cell") != cell):
        return False
    document = {**document, "fingerprint": new}
    if target is None or renamed is None:
        atomic_write(path, lambda stream: json.dump(document, stream))
        return True
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    for name in data.get("artifacts", {}):  # none for dataset-bc's runs today; moved with their run if any
        if path.with_suffix("." + name).is_file():
            os.replace(path.with_suffix("." + name), target.with_suffix("." + name))
    data = {**data, "cell": renamed}
    document = {**document, "data": data, "checksum": hashlib.sha256(_canonical(data)).hexdigest()}
    atomic_write(target, lambda stream: json.dump(document, stream))  # before the old file goes
    path.unlink()
    return True


def _recorded_experiment(settings: dict):
    """The experiment a folder's whole-sweep settings describe (its cells and flags as recorded, the settings it does
    not name at their defaults), or ``None`` when they describe none (a setting this version does not know, a
    plug-in that no longer loads, a value out of range)."""
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment
    from curteach_teaching.sweeps.fingerprints import setting_names

    names = setting_names(DatasetBCExperiment)
    if settings.get("experiment") != "dataset-bc" or set(settings) - set(names) - set(_NOT_FIELDS):
        return None
    given = {name: value for name, value in settings.items() if name in names}
    for name in ("curricula", "obs_keys"):
        if isinstance(given.get(name), list):
            given[name] = tuple(given[name])
    try:
        return DatasetBCExperiment(**given)
    except (TypeError, ValueError):
        return None


def upgrade_folder(out_dir: str | Path, seed: int) -> list[str]:
    """Give each cell of the sweep ``out_dir`` records in the whole-sweep form (and ``seed``) its own settings: every
    run file of that sweep re-keyed (a renamed cell's moved), ``sweep.json`` rewritten with the shared settings and
    the cells'.

    Returns:
        One line saying what was upgraded, or none (no folder, one of this version's form, another seed, or settings
        that describe no sweep of this version, which the sweep refuses with its own message).
    """
    from curteach_teaching.sweeps.sweep import cell_fingerprints

    out_dir = Path(out_dir)
    record_path = out_dir / RECORD_NAME
    try:
        record = json.loads(record_path.read_text())
        recorded = record["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    if record.get("format") != RECORD_FORMAT or "cells" in record or record.get("seed") != seed or \
            not isinstance(recorded, dict) or "curricula" not in recorded:
        return []
    experiment = _recorded_experiment(recorded)
    if experiment is None or not experiment.digest:
        return []
    settings = json.loads(json.dumps(experiment.settings()))
    cells = json.loads(json.dumps({cell: experiment.cell_settings(cell) for cell in experiment.cells}))
    new = cell_fingerprints(experiment, settings)
    old = fingerprint(recorded)
    renamed = {name: older for older, name in experiment.renamed_cells().items()}
    count, moved = 0, {}
    for cell in experiment.cells:
        for path in sorted((out_dir / "runs" / cell).glob("run_*.json")):
            count += rekey_run_file(path, old, new[cell], cell)
        if cell in renamed:
            for path in sorted((out_dir / "runs" / renamed[cell]).glob("run_*.json")):
                target = out_dir / "runs" / cell / path.name
                if rekey_run_file(path, old, new[cell], renamed[cell], target, cell):
                    count += 1
                    moved[f"{renamed[cell]} -> {cell}"] = moved.get(f"{renamed[cell]} -> {cell}", 0) + 1
            folder = out_dir / "runs" / renamed[cell]
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    atomic_write(record_path, lambda stream: json.dump({**record, "settings": settings, "cells": cells}, stream,
                                                       indent=1))
    what = ["each cell has its own settings now, so cells can be added, dropped or reordered"]
    if "sources" in recorded:
        what.append("its settings name the data by its digest, not the datasets' paths")
    read = set(settings) | {name for own in cells.values() for name in own}
    gone = sorted(name for name in recorded if name not in (*_NOT_FIELDS, *_RESOLVED, *read))
    if gone:
        what.append(f"settings no cell reads are left out of them ({', '.join(gone)})")
    if moved:
        what.append(f"the cells that take --use {experiment.use} say so ("
                    + ", ".join(f"{pair}: {n} run files" for pair, n in moved.items()) + ")")
    return [f"upgraded {out_dir}: {'; '.join(what)} ({count} run files re-keyed)"]
