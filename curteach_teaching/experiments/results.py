"""Results of teaching experiments: one validated file per run, the tidy summary table, the flagged fraction.

**Run files** (``DIR/runs/run_00007.json``) are JSON: ``{"format", "fingerprint", "checksum", "data"}``.
``data`` holds the run index, its seed, every teacher's expected-reward curve ``(T + 1,)``, the start state and task
type it picked at every step ``(T,)``, the crash flag and free-form extras. ``checksum`` is the SHA-256 of ``data``
in canonical JSON (Python's float ``repr`` round-trips exactly), and ``fingerprint`` identifies the experiment's
settings. A file that does not parse, fails its checksum, has the wrong shapes, or was written for other settings is
*not used*: :func:`load_run` says why and the runner recomputes the run. Files are written atomically (temporary
file in the same folder, then ``os.replace``), so an interrupted write never leaves a half file under the final name.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from curteach_envs.files import atomic_write

__all__ = [
    "RunResult",
    "SUBSETS",
    "fingerprint",
    "run_path",
    "atomic_write",
    "save_run",
    "load_run",
    "summarize",
    "write_summary",
    "read_summary",
    "flagged_fraction",
]

FORMAT = "curteach-run-1"
SUBSETS = ("all", "finished")


@dataclass
class RunResult:
    """One run of a teaching experiment.

    Attributes:
        index: the run index (0-based).
        seed: the ``--seed`` the run's seed was derived from.
        curves: teacher name -> ``(T + 1,)`` metric after 0..T teaching steps.
        picks: teacher name -> ``(T,)`` start state chosen at each step.
        pick_types: teacher name -> ``(T,)`` task type of that start state.
        crash_step: the teaching step at which the original code would have stopped (``None``: it would finish).
        extras: JSON-serialisable scalars (e.g. the expert's value).
    """

    index: int
    seed: int
    curves: dict
    picks: dict
    pick_types: dict
    crash_step: Optional[int] = None
    extras: dict = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """Whether the original code would have completed this run."""
        return self.crash_step is None

    def to_data(self) -> dict:
        """The JSON-serialisable payload."""
        return {
            "index": int(self.index),
            "seed": int(self.seed),
            "curves": {k: [float(x) for x in v] for k, v in self.curves.items()},
            "picks": {k: [int(x) for x in v] for k, v in self.picks.items()},
            "pick_types": {k: [int(x) for x in v] for k, v in self.pick_types.items()},
            "crash_step": None if self.crash_step is None else int(self.crash_step),
            "extras": self.extras,
        }

    @classmethod
    def from_data(cls, data: dict) -> "RunResult":
        """Inverse of :meth:`to_data`; raises ``ValueError`` on inconsistent shapes."""
        curves = {k: np.asarray(v, dtype=np.float64) for k, v in data["curves"].items()}
        picks = {k: np.asarray(v, dtype=np.int64) for k, v in data["picks"].items()}
        types = {k: np.asarray(v, dtype=np.int64) for k, v in data["pick_types"].items()}
        if set(curves) != set(picks) or set(curves) != set(types):
            raise ValueError("curves, picks and pick_types name different teachers")
        for name, curve in curves.items():
            steps = curve.shape[0] - 1
            if curve.ndim != 1 or picks[name].shape != (steps,) or types[name].shape != (steps,):
                raise ValueError(f"inconsistent shapes for teacher {name!r}")
        crash = data["crash_step"]
        return cls(
            index=int(data["index"]),
            seed=int(data["seed"]),
            curves=curves,
            picks=picks,
            pick_types=types,
            crash_step=None if crash is None else int(crash),
            extras=dict(data.get("extras", {})),
        )


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def fingerprint(settings: dict) -> str:
    """A short hash of an experiment's settings (JSON-serialisable dict)."""
    return hashlib.sha256(_canonical(settings)).hexdigest()[:16]


def run_path(out_dir: Path, index: int) -> Path:
    """``out_dir / "runs" / "run_00007.json"``."""
    return Path(out_dir) / "runs" / f"run_{index:05d}.json"


def save_run(path: Path, result: RunResult, settings_fingerprint: str) -> None:
    """Write ``result`` atomically (:func:`atomic_write`) with its checksum."""
    data = result.to_data()
    document = {
        "format": FORMAT,
        "fingerprint": settings_fingerprint,
        "checksum": hashlib.sha256(_canonical(data)).hexdigest(),
        "data": data,
    }
    atomic_write(path, lambda stream: json.dump(document, stream))


def load_run(path: Path, settings_fingerprint: str, index: int) -> tuple[Optional[RunResult], str]:
    """Load and validate a run file.

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
        result = RunResult.from_data(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        return None, f"unreadable ({type(error).__name__}: {error})"
    if result.index != index:
        return None, f"holds run {result.index}, not {index}"
    return result, ""


def _mean_sem(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over runs (axis 0); SEM is NaN with fewer than 2 runs."""
    n = stack.shape[0]
    if n == 0:
        nan = np.full(stack.shape[1], np.nan)
        return nan, nan
    mean = stack.mean(axis=0)
    sem = stack.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(stack.shape[1], np.nan)
    return mean, sem


def summarize(results: Sequence[RunResult], teachers: Sequence[str]) -> list[dict]:
    """The tidy table: one row per (teacher, subset, t) with ``mean``, ``sem`` (over runs) and ``n`` runs.

    ``subset`` is ``"all"`` or ``"finished"`` (runs whose ``crash_step`` is ``None``).
    """
    if not results:
        return []
    runs = {subset: [r for r in results if subset == "all" or r.finished] for subset in SUBSETS}
    rows = []
    for teacher in teachers:
        length = results[0].curves[teacher].shape[0]
        for subset, chosen in runs.items():
            stack = np.array([r.curves[teacher] for r in chosen]).reshape(len(chosen), length)
            mean, sem = _mean_sem(stack)
            for t in range(length):
                rows.append(
                    {"teacher": teacher, "subset": subset, "t": t, "mean": float(mean[t]), "sem": float(sem[t]),
                     "n": len(chosen)}
                )
    return rows


def write_summary(rows: Sequence[dict], path: Path) -> None:
    """Write the summary table as CSV (columns ``teacher, subset, t, mean, sem, n``), atomically."""

    def write(stream) -> None:
        writer = csv.DictWriter(stream, fieldnames=["teacher", "subset", "t", "mean", "sem", "n"])
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "mean": repr(row["mean"]), "sem": repr(row["sem"])})

    atomic_write(path, write, newline="")


def read_summary(path: Path) -> list[dict]:
    """Read a summary CSV back (``t``, ``n`` as int; ``mean``, ``sem`` as float)."""
    with open(path, newline="") as stream:
        return [
            {"teacher": r["teacher"], "subset": r["subset"], "t": int(r["t"]), "mean": float(r["mean"]),
             "sem": float(r["sem"]), "n": int(r["n"])}
            for r in csv.DictReader(stream)
        ]


def flagged_fraction(results: Sequence[RunResult]) -> float:
    """Fraction of runs the original code would not have finished (NaN for no runs)."""
    if not results:
        return float("nan")
    return sum(not r.finished for r in results) / len(results)
