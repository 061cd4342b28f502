"""Folders of ``dataset-bc`` written before the settings named the data by its digest alone: upgraded in place.

Until this version a sweep's settings also held ``sources``, the datasets' ids or paths as given, so a moved dataset
did not resume. The data is named by ``digest`` (:func:`~curteach_teaching.experiments.dataset_bc.data.pool_digest`,
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
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from curteach_envs._util import atomic_write
from curteach_teaching.sweeps.folders import RECORD_FORMAT, RECORD_NAME
from curteach_teaching.sweeps.results import fingerprint

__all__ = ["migrate_folder", "rename_cells"]

#: the settings this version no longer records
_DROPPED = ("sources",)


def _canonical(obj) -> bytes:  # as the run files' checksums are computed (sweeps.results)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


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
    old_fingerprint, new_fingerprint = fingerprint(old), fingerprint(current)
    count = 0
    for path in sorted(out_dir.glob("runs/*/run_*.json")):
        try:
            document = json.loads(path.read_text())
            intact = hashlib.sha256(_canonical(document["data"])).hexdigest() == document["checksum"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not intact or document.get("fingerprint") != old_fingerprint:
            continue
        document["fingerprint"] = new_fingerprint
        atomic_write(path, lambda stream, document=document: json.dump(document, stream))
        count += 1
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
