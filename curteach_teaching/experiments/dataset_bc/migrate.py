"""Folders of ``dataset-bc`` written before the settings named the data by its digest alone: upgraded in place.

Until this version a sweep's settings also held ``sources``, the datasets' ids or paths as given, so a moved dataset
did not resume. The data is named by ``digest`` (:func:`~curteach_teaching.experiments.dataset_bc.data.pool_digest`,
unchanged), so a folder whose recorded settings are the current ones plus ``sources`` holds runs of the same
settings and the same data: :func:`migrate_folder` drops ``sources`` from its ``sweep.json`` and re-keys every run
file to the new settings' fingerprint (a run file's data and checksum are left as they are; a file whose checksum or
old fingerprint does not match is left alone, and the sweep then recomputes it, saying why). Every file is replaced
atomically (``sweep.json`` last), so an interrupted upgrade leaves a folder the next command upgrades again. A
report of the saved runs (``--report-only``) upgrades too: it writes the folder's report files anyway.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from curteach_envs._util import atomic_write
from curteach_teaching.sweeps.folders import RECORD_FORMAT, RECORD_NAME
from curteach_teaching.sweeps.results import fingerprint

__all__ = ["migrate_folder"]

#: the settings this version no longer records
_DROPPED = ("sources",)


def _canonical(obj) -> bytes:  # as the run files' checksums are computed (sweeps.results)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def migrate_folder(out_dir: str | Path, settings: dict, seed: int) -> str:
    """Upgrade ``out_dir`` to ``settings`` when it holds a sweep of the same settings recorded with ``sources``.

    Args:
        out_dir: the sweep's folder; settings: the current experiment's settings; seed: the sweep's seed.

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
    if record.get("format") != RECORD_FORMAT or not isinstance(old, dict) or not any(k in old for k in _DROPPED):
        return ""
    current = json.loads(json.dumps(settings))
    if {k: v for k, v in old.items() if k not in _DROPPED} != current or record.get("seed") != seed:
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
    return (f"upgraded {out_dir}: its settings now name the data by its digest, not the datasets' paths "
            f"({count} run files re-keyed)")
