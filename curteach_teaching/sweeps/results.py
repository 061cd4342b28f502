"""Run files: one validated JSON file per (cell, run), written by the sweep's driver.

**Run files** (``DIR/runs/<cell>/run_00007.json``) are JSON: ``{"format", "fingerprint", "checksum", "data"}``.
``data`` is :meth:`RunResult.to_data`: the cell, the run index, its seed, the curves, the per-step records,
free-form extras and the SHA-256 of each artifact. **Artifacts** are binary files of a run (e.g. a trained model's
``state_dict``), written beside the run file as ``run_00007.<name>`` before it; a run whose artifact is missing or
does not match its digest is not used for computing (a report of the saved runs reads no artifact). ``checksum`` is
the SHA-256 of ``data`` in canonical JSON (Python's float ``repr`` round-trips exactly), and ``fingerprint``
identifies the experiment's settings. A file that does not parse, fails its checksum, has inconsistent shapes, or was
written for other settings is *not used*: :func:`load_run` says why and the sweep recomputes the run. Files are
written atomically (a temporary file in the same folder, then ``os.replace``), so an interrupted write never leaves a
half file under the final name.

This module knows nothing of any experiment: the summary table and the reports are in
:mod:`curteach_teaching.sweeps.reports`, the car's run layout in :mod:`curteach_teaching.experiments.car.result`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write

__all__ = [
    "RunResult",
    "FORMAT",
    "DEFAULT_CELL",
    "check_cell_name",
    "fingerprint",
    "run_path",
    "artifact_path",
    "check_artifact",
    "save_run",
    "load_run",
]

FORMAT = "curteach-run-2"
#: The cell of an experiment that has a single setting (the car experiments).
DEFAULT_CELL = "main"
_CELL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,99}$")
_ARTIFACT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,59}$")


def check_cell_name(cell) -> str:
    """``cell`` if it is a usable folder name (letters, digits, ``. _ = + -``; not starting with a dot), else
    ``ValueError``."""
    if not isinstance(cell, str) or not _CELL_PATTERN.match(cell):
        raise ValueError(
            f"cell names must be 1-100 characters of letters, digits and . _ = + - (not starting with a dot "
            f"or a sign); got {cell!r}"
        )
    return cell


def check_artifact(name, blob) -> bytes:
    """``blob`` if ``name`` is a usable file suffix (letters, digits, ``. _ -``) and ``blob`` is bytes, else
    ``ValueError``."""
    if not isinstance(name, str) or not _ARTIFACT_PATTERN.match(name):
        raise ValueError(
            f"artifact names must be 1-60 letters, digits and . _ - (not starting with a dot); got {name!r}"
        )
    if not isinstance(blob, (bytes, bytearray)):
        raise ValueError(f"artifact {name!r} must be bytes; got {type(blob).__name__}")
    return bytes(blob)


def artifact_path(run_file: Path, name: str) -> Path:
    """``runs/<cell>/run_00007.<name>`` beside the run file ``runs/<cell>/run_00007.json``."""
    return Path(run_file).with_suffix("." + name)


def _array(values) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype == object or array.ndim != 1:
        raise ValueError("curves and records must be one-dimensional numeric arrays")
    return array


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """One run of one cell of an experiment, built once (frozen, keywords only); :func:`dataclasses.replace` makes a
    changed copy. Its dicts are the run's data: nothing changes them after the result is built.

    Attributes:
        index: the run index (0-based); run ``i`` of every cell draws from ``SeedSequence([seed, i])``.
        seed: the sweep's ``--seed`` (set by the driver).
        curves: name -> ``(L,)`` float metric (e.g. a teacher's expected reward after ``0..T`` steps, ``L = T + 1``).
        records: record name -> (curve name -> ``(T,)`` per-step values, int or float), e.g. the start state each
            teacher picked at each step: ``records["picks"]["Cur"]``.
        extras: JSON-serialisable free-form values (e.g. the expert's reward, the step a run would have crashed).
        cell: the cell's name (:data:`DEFAULT_CELL` for single-cell experiments).
        artifacts: name -> bytes of a binary file of the run (e.g. ``"model.pt"``); saved beside the run file.
    """

    index: int
    seed: int
    curves: dict
    records: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    cell: str = DEFAULT_CELL
    artifacts: dict = field(default_factory=dict)

    def to_data(self) -> dict:
        """The JSON-serialisable payload (integer records stay integers, floats round-trip exactly)."""
        return {
            "cell": self.cell,
            "index": int(self.index),
            "seed": int(self.seed),
            "curves": {k: [float(x) for x in v] for k, v in self.curves.items()},
            "records": {
                name: {k: np.asarray(v).tolist() for k, v in per_curve.items()}
                for name, per_curve in self.records.items()
            },
            "extras": self.extras,
            "artifacts": {name: hashlib.sha256(check_artifact(name, blob)).hexdigest()
                          for name, blob in self.artifacts.items()},
        }

    @classmethod
    def from_data(cls, data: dict, artifacts: dict | None = None) -> RunResult:
        """Inverse of :meth:`to_data` (the artifacts' bytes, checked against their digests by the caller, come
        separately); raises ``ValueError`` on inconsistent shapes."""
        curves = {k: _array(v).astype(np.float64) for k, v in data["curves"].items()}
        records = {}
        for name, per_curve in data["records"].items():
            records[name] = {k: _array(v) for k, v in per_curve.items()}
            unknown = set(records[name]) - set(curves)
            if unknown:
                raise ValueError(f"record {name!r} names curves that do not exist: {sorted(unknown)}")
        return cls(
            index=int(data["index"]),
            seed=int(data["seed"]),
            curves=curves,
            records=records,
            extras=dict(data.get("extras", {})),
            cell=check_cell_name(data["cell"]),
            artifacts={} if artifacts is None else dict(artifacts),
        )


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def fingerprint(settings: dict) -> str:
    """A short hash of an experiment's settings (JSON-serialisable dict)."""
    return hashlib.sha256(_canonical(settings)).hexdigest()[:16]


def run_path(out_dir: Path, index: int, cell: str = DEFAULT_CELL) -> Path:
    """``out_dir / "runs" / cell / "run_00007.json"``."""
    return Path(out_dir) / "runs" / check_cell_name(cell) / f"run_{index:05d}.json"


def save_run(path: Path, result: RunResult, settings_fingerprint: str) -> None:
    """Write ``result`` atomically (:func:`atomic_write`) with its checksum; its artifacts first, so that a valid
    run file always has its artifacts."""
    data = result.to_data()
    for name, blob in result.artifacts.items():
        atomic_write(artifact_path(path, name), lambda stream, blob=blob: stream.write(blob), binary=True)
    document = {
        "format": FORMAT,
        "fingerprint": settings_fingerprint,
        "checksum": hashlib.sha256(_canonical(data)).hexdigest(),
        "data": data,
    }
    atomic_write(path, lambda stream: json.dump(document, stream))


def load_run(
    path: Path, settings_fingerprint: str, index: int, cell: str = DEFAULT_CELL, *, artifacts: bool = True
) -> tuple[RunResult | None, str]:
    """Load and validate a run file.

    Args:
        artifacts: read the run's artifacts and refuse the run if one is missing or does not match its digest;
            ``False`` (a report of the saved runs, which reads none of them) leaves them unread, so a folder whose
            model weights are kept elsewhere (the committed results: ``docs/results/MANIFEST.weights.json``) is
            still reported. The result's ``artifacts`` are then empty.

    Returns:
        ``(result, "")`` for a valid file of these settings, else ``(None, reason)`` (missing, corrupt, stale).
    """
    path = Path(path)
    if not path.exists():
        return None, "missing"
    try:
        document = json.loads(path.read_text())
        if document.get("format") != FORMAT:
            return None, f"unknown format {document.get('format')!r}"
        data = document["data"]
        if hashlib.sha256(_canonical(data)).hexdigest() != document["checksum"]:
            return None, "checksum mismatch (corrupt file)"
        if document["fingerprint"] != settings_fingerprint:
            return None, "written for other settings"
        blobs = {}
        for name, digest in data.get("artifacts", {}).items():
            check_artifact(name, b"")
            if not artifacts:
                continue
            if not artifact_path(path, name).exists():
                return None, f"artifact {name!r} is missing"
            blob = artifact_path(path, name).read_bytes()
            if hashlib.sha256(blob).hexdigest() != digest:
                return None, f"artifact {name!r} does not match its checksum (corrupt file)"
            blobs[name] = blob
        result = RunResult.from_data(data, blobs)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        return None, f"unreadable ({type(error).__name__}: {error})"
    if result.index != index or result.cell != cell:
        return None, f"holds run {result.index} of cell {result.cell!r}, not run {index} of {cell!r}"
    return result, ""

