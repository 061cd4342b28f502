"""Folders of ``dataset-bc`` written before the settings named the data by its digest alone: upgraded in place.

Until this version a sweep's settings also held ``sources``, the datasets' ids or paths as given, so a moved dataset
did not resume. The data is named by ``digest`` (:func:`~curteach_teaching.datasets.prepared.pool_digest`,
unchanged), so a folder whose recorded settings are the current ones plus ``sources`` holds runs of the same
settings and the same data: :func:`migrate_folder` drops ``sources`` from its ``sweep.json`` and re-keys every run
file to the new settings' fingerprint (a run file's data and checksum are left as they are; a file whose checksum or
old fingerprint does not match is left alone, and the sweep then recomputes it, saying why). Every file is replaced
atomically (``sweep.json`` last), so an interrupted upgrade leaves a folder the next command upgrades again. A
report of the saved runs (``--report-only``) upgrades too: it writes the folder's report files anyway. The same
upgrade applies to the settings no cell reads, which the settings now leave out (``--keep`` without a select cell,
``--task-difficulty`` where every cell names its own, ...): a folder that recorded them resumes, whatever their values.

Until this version, too, a cell that took the sweep's ``--use select`` (or ``weight``) was named as its curriculum
(``Cur``); it is now named with its use (``Cur+select``). :func:`rename_cells` moves such a folder's run files to the
new cell's folder, their ``cell`` rewritten and their checksum recomputed (only intact files of this sweep's settings
and seed; each written atomically before the old one is deleted, so an interrupted rename is finished by the next
command).

Until this version, lastly, the settings of a sweep held its whole list of cells, so a cell added, dropped or moved
made the folder another sweep's. The settings are now those every cell shares, and each cell has its own
(:meth:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment.cell_settings`): :func:`split_cells`
re-keys each run file to its cell's new fingerprint and records the cells in ``sweep.json``. :func:`upgrade_folder`
applies the three upgrades in turn, to the sweep the folder records (whatever the command's flags now say: the
sweep then compares the two as usual, and a difference is refused with its own message).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from curteach_envs._util import atomic_write
from curteach_teaching.curriculum.selection import check_variant
from curteach_teaching.experiments.dataset_bc.cells import parse_cell
from curteach_teaching.names import AGN
from curteach_teaching.sweeps.folders import RECORD_FORMAT, RECORD_NAME
from curteach_teaching.sweeps.results import fingerprint

__all__ = ["legacy_settings", "migrate_folder", "rekey_run_files", "rename_cells", "split_cells", "upgrade_folder"]

#: the settings this version no longer records
_DROPPED = ("sources",)


def _canonical(obj) -> bytes:  # as the run files' checksums are computed (sweeps.results)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def rekey_run_files(paths, old: str, new: str, cell: str | None = None) -> int:
    """Give every intact run file of ``paths`` whose fingerprint is ``old`` (and, with ``cell``, whose run is of that
    cell) the fingerprint ``new``, each written atomically, its data and checksum as they were; how many it
    re-keyed. A damaged file, or one of other settings, is left alone (the sweep recomputes it, saying why)."""
    count = 0
    for path in paths:
        try:
            document = json.loads(Path(path).read_text())
            intact = hashlib.sha256(_canonical(document["data"])).hexdigest() == document["checksum"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if intact and document.get("fingerprint") == old and (cell is None or document["data"].get("cell") == cell):
            document["fingerprint"] = new
            atomic_write(path, lambda stream, document=document: json.dump(document, stream))
            count += 1
    return count


def migrate_folder(out_dir: str | Path, settings: dict, seed: int, unused: Sequence[str] = ()) -> str:
    """Upgrade ``out_dir`` to ``settings`` when it holds a sweep of the same settings recorded with ``sources``, or
    with settings that no cell reads (``unused``: the experiment's
    :meth:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment.unused_settings`, which its
    settings now leave out; a folder of ``--keep 0.5 --curricula Agn,Cur`` then resumes with any ``--keep``).

    Args:
        out_dir: the sweep's folder; settings: the current experiment's settings; seed: the sweep's seed;
        unused: the names of the settings no cell reads.

    Returns:
        One line saying what was upgraded, or ``""`` (nothing to upgrade: no folder, a current one, or one of other
        settings, which the sweep refuses with its own message).
    """
    out_dir = Path(out_dir)
    record_path = out_dir / RECORD_NAME
    try:
        record = json.loads(record_path.read_text())
        old = record["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    current = json.loads(json.dumps(settings))
    leave = (set(_DROPPED) | set(unused)) - set(current)
    if record.get("format") != RECORD_FORMAT or not isinstance(old, dict) or not any(k in old for k in leave):
        return ""
    if {k: v for k, v in old.items() if k not in leave} != current or record.get("seed") != seed:
        return ""
    count = rekey_run_files(sorted(out_dir.glob("runs/*/run_*.json")), fingerprint(old), fingerprint(current))
    upgraded = {**record, "settings": current}
    atomic_write(record_path, lambda stream: json.dump(upgraded, stream, indent=1))
    what = ["its settings now name the data by its digest, not the datasets' paths"] if "sources" in old else []
    gone = sorted(k for k in old if k in leave and k not in _DROPPED)
    if gone:
        what.append(f"settings no cell reads are left out of them ({', '.join(gone)})")
    return f"upgraded {out_dir}: {'; '.join(what)} ({count} run files re-keyed)"


def rename_cells(out_dir: str | Path, renamed: dict, settings: dict, seed: int) -> str:
    """Move the runs of the cells ``renamed`` (``{old name: name}``, from
    :meth:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment.renamed_cells`) to their new
    names, in a folder that holds a sweep of ``settings`` and ``seed``.

    Returns:
        One line saying what was moved, or ``""`` (nothing to move, or a folder of other settings, which the sweep
        refuses with its own message).
    """
    out_dir = Path(out_dir)
    try:
        record = json.loads((out_dir / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return ""
    if not renamed or not isinstance(record, dict) or record.get("format") != RECORD_FORMAT or \
            record.get("settings") != json.loads(json.dumps(settings)) or record.get("seed") != seed:
        return ""
    current = fingerprint(json.loads(json.dumps(settings)))
    moved = {}
    for old, new in renamed.items():
        for path in sorted((out_dir / "runs" / old).glob("run_*.json")):
            target = out_dir / "runs" / new / path.name
            try:
                document = json.loads(path.read_text())
                data = document["data"]
                intact = hashlib.sha256(_canonical(data)).hexdigest() == document["checksum"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if not intact or document.get("fingerprint") != current or data.get("cell") != old or target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            for name in data.get("artifacts", {}):  # none for dataset-bc's runs today; moved with their run if any
                if path.with_suffix("." + name).is_file():
                    os.replace(path.with_suffix("." + name), target.with_suffix("." + name))
            data = {**data, "cell": new}
            document = {**document, "data": data, "checksum": hashlib.sha256(_canonical(data)).hexdigest()}
            atomic_write(target, lambda stream, document=document: json.dump(document, stream))
            path.unlink()
            moved[f"{old} -> {new}"] = moved.get(f"{old} -> {new}", 0) + 1
        folder = out_dir / "runs" / old
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if not moved:
        return ""
    return (f"renamed the cells of {out_dir} that take --use {settings.get('use')} to say so: "
            + ", ".join(f"{pair} ({n} run files)" for pair, n in moved.items()))


def legacy_unused(experiment) -> tuple[str, ...]:
    """The settings the whole-sweep settings of the last version left out as read by no cell: ``task_difficulty``
    and ``use`` where every cell but Agn named its own, ``keep`` without a select cell, ``temperature`` without a
    weight cell, the ensemble's settings where no cell read ``ensemble``."""
    written = [parse_cell(spec) for spec in experiment.curricula]
    preferring = [w for w in written if check_variant(w.curriculum) != AGN]
    specs = [experiment.cell_spec(cell) for cell in experiment.cells]
    uses = {spec.use for spec in specs if spec.curriculum != AGN}
    unused = []
    if all(w.task is not None for w in preferring):
        unused.append("task_difficulty")
    if all(w.use is not None for w in preferring):
        unused.append("use")
    unused += [name for name, use in (("keep", "select"), ("temperature", "weight")) if use not in uses]
    if "ensemble" not in experiment.tasks():
        unused += ["ensemble_size", "ensemble_batches", "teacher_seed"]
    return tuple(unused)


def legacy_settings(experiment) -> dict:
    """The settings of ``experiment`` as the last version recorded them, one dict for the whole sweep (its cells in
    ``curricula``), as JSON reads them back."""
    data = experiment.setting_fields()
    for name in legacy_unused(experiment):
        data.pop(name, None)
    data["curricula"] = list(experiment.curricula)
    data["experiment"] = "dataset-bc"
    return json.loads(json.dumps(data))


def _recorded_experiment(settings: dict):
    """The experiment a folder's whole-sweep settings describe (its cells and flags as recorded, the settings
    recorded by none at their defaults), or ``None`` when they describe none."""
    from dataclasses import fields

    from curteach_teaching.experiments.dataset_bc.experiment import NOT_SETTINGS, DatasetBCExperiment

    names = {f.name for f in fields(DatasetBCExperiment)} - set(NOT_SETTINGS)
    given = {name: value for name, value in settings.items() if name in names}
    for name in ("curricula", "obs_keys"):
        if isinstance(given.get(name), list):
            given[name] = tuple(given[name])
    try:
        return DatasetBCExperiment(**given)
    except (TypeError, ValueError):  # a plug-in that no longer loads, a value out of range: no upgrade
        return None


def split_cells(out_dir: str | Path, experiment, seed: int) -> str:
    """Give the cells of ``experiment`` their own settings in ``out_dir``, when it records ``experiment``'s sweep in
    the last version's form (:func:`legacy_settings`) and ``seed``: every intact run file of that sweep is re-keyed
    to its cell's fingerprint, and ``sweep.json`` records the shared settings and the cells'.

    Returns:
        One line saying what was upgraded, or ``""`` (nothing to upgrade).
    """
    from curteach_teaching.sweeps.sweep import cell_fingerprints

    out_dir = Path(out_dir)
    record_path = out_dir / RECORD_NAME
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return ""
    legacy = legacy_settings(experiment)
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT or "cells" in record or \
            record.get("settings") != legacy or record.get("seed") != seed:
        return ""
    settings = experiment.settings()
    new = cell_fingerprints(experiment, settings)
    old = fingerprint(legacy)
    count = sum(rekey_run_files(sorted((out_dir / "runs" / cell).glob("run_*.json")), old, new[cell], cell)
                for cell in experiment.cells)
    cells = {cell: experiment.cell_settings(cell) for cell in experiment.cells}
    upgraded = {**record, "settings": json.loads(json.dumps(settings)), "cells": json.loads(json.dumps(cells))}
    atomic_write(record_path, lambda stream: json.dump(upgraded, stream, indent=1))
    return (f"upgraded {out_dir}: each cell has its own settings now, so cells can be added, dropped or reordered "
            f"({count} run files re-keyed)")


def upgrade_folder(out_dir: str | Path, seed: int) -> list[str]:
    """Every upgrade of this module, in turn, applied to the sweep ``out_dir`` records (not to the command's
    flags: a folder of ``Agn,Cur`` is upgraded when the command now asks for ``Agn,Cur,Cur-T``, and then resumes
    with the new cell); one line per upgrade made."""
    try:
        record = json.loads((Path(out_dir) / RECORD_NAME).read_text())
        recorded = record["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    if not isinstance(record, dict) or "cells" in record or not isinstance(recorded, dict) or \
            "curricula" not in recorded:
        return []
    experiment = _recorded_experiment(recorded)
    if experiment is None:
        return []
    legacy = legacy_settings(experiment)
    lines = [migrate_folder(out_dir, legacy, seed, legacy_unused(experiment)),
             rename_cells(out_dir, experiment.renamed_cells(), legacy, seed),
             split_cells(out_dir, experiment, seed)]
    return [line for line in lines if line]
