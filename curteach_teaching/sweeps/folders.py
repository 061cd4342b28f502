"""One sweep per output folder: a lock while it computes, and a record of what the folder holds.

* **Lock.** A computing sweep holds an exclusive ``flock`` on ``DIR/.curteach.lock`` (the file keeps the holder's
  pid). A second sweep on the same folder is refused at once (``DIR is in use by pid N``). The operating system
  releases the lock when the holder exits in any way, a crash or ``kill -9`` included, so a stale lock never blocks
  a folder. Where ``fcntl`` does not exist (Windows), or the file system refuses locks, there is no lock.
* **Record.** ``DIR/sweep.json`` names the experiment's settings, the sweep's seed and the curteach version that
  wrote the runs. A sweep whose settings, seed or version differ is refused with a message naming each difference,
  unless ``overwrite=True`` (``--overwrite``), which first deletes what the library wrote there, by name
  (:func:`library_files`: run files and their models, checkpoints, the last report's outputs, ``report.json`` and
  ``sweep.json``); any other file in the folder, under ``runs/`` and ``checkpoints/`` included, stays (so does a
  cached navigation dataset). A folder from before this record (run files only) is adopted when every run file is
  of this sweep's settings and seed, and refused otherwise. A damaged ``sweep.json`` beside intact runs can be
  deleted: the folder is then adopted again from its (checksummed) run files.
* **Cells of their own.** An experiment whose cells have their own settings (``cell_settings(cell)``, e.g.
  ``dataset-bc``'s curricula) records its shared settings and, under ``cells``, the settings of every cell run in
  the folder. A sweep of the same shared settings may then add, drop or reorder cells: a new cell is recorded and
  computed, a dropped one keeps its runs (they are reported again when it comes back), and only a cell recorded
  with other settings is a difference.
* **Command.** The record also keeps the command line that last computed in the folder and its working folder
  (``{"argv": [...], "cwd": ...}``), so that ``curteach report DIR`` can write the folder's report without the
  flags being repeated; it is not a setting (another ``--workers`` is the same sweep).
"""

from __future__ import annotations

import errno
import importlib.metadata
import json
import os
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from curteach_envs._util import atomic_write

__all__ = [
    "LOCK_NAME",
    "RECORD_NAME",
    "check_folder",
    "folder_lock",
    "library_files",
    "library_version",
    "recorded_command",
    "remove_interrupted_writes",
    "remove_stale_outputs",
]

LOCK_NAME = ".curteach.lock"
RECORD_NAME = "sweep.json"
RECORD_FORMAT = "curteach-sweep-1"

#: folders this process holds the lock of -> [open lock file, nesting depth]
_HELD: dict = {}


def library_version() -> str:
    """The installed curteach version (``"unknown"`` when it is not installed)."""
    try:
        return importlib.metadata.version("curteach")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@contextmanager
def folder_lock(out_dir: str | os.PathLike) -> Iterator[None]:
    """Hold ``out_dir``'s lock within the block (re-entrant within this process).

    Raises:
        ValueError: another process holds it (``"DIR is in use by pid N"``), or the folder cannot be written.
    """
    out_dir = Path(out_dir)
    key = str(out_dir.resolve())
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    try:
        import fcntl
    except ImportError:  # no flock here: no lock
        yield
        return
    check_writable(out_dir)
    path = out_dir / LOCK_NAME
    stream = open(path, "a+")
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            # a file system without locks (some network mounts): go on unlocked rather than refuse every sweep
            stream.close()
            yield
            return
        stream.seek(0)
        holder = stream.read().strip()
        stream.close()
        who = f"pid {holder}" if holder.isdigit() else "another process"
        raise ValueError(f"{out_dir} is in use by {who} (another sweep writes there); wait for it or choose "
                         "another --out") from None
    stream.seek(0)
    stream.truncate()
    stream.write(str(os.getpid()))
    stream.flush()
    _HELD[key] = [stream, 1]
    try:
        yield
    finally:
        _HELD.pop(key, None)
        stream.close()  # closing releases the flock


def check_writable(out_dir: Path) -> None:
    """``ValueError`` unless ``out_dir`` is (or can be made) a folder this process can write into."""
    if str(out_dir) == "":
        raise ValueError("the output folder must not be empty")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir} is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create the output folder {out_dir}: {error.strerror or error}") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write into the output folder {out_dir} (permission denied)")


def _setting_differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``"PREFIXname: old -> new"`` for every setting that differs between two settings dicts."""
    return [f"{prefix}{name}: {old.get(name, '(absent)')!r} -> {new.get(name, '(absent)')!r}"
            for name in sorted(set(old) | set(new)) if old.get(name, "(absent)") != new.get(name, "(absent)")]


def _differences(recorded: dict, current: dict) -> list[str]:
    """``"name: recorded -> current"`` for every differing entry (settings flattened one level; cells' settings
    compared for the cells both hold: cells may come and go)."""
    lines = []
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key, "(absent)"), current.get(key, "(absent)")
        if key == "settings" and isinstance(old, dict) and isinstance(new, dict):
            lines += _setting_differences(old, new)
        elif key == "cells" and isinstance(old, dict) and isinstance(new, dict):
            lines += [line for cell in new if isinstance(old.get(cell), dict) and isinstance(new[cell], dict)
                      for line in _setting_differences(old[cell], new[cell], f"cell {cell!r}: ")]
        elif key == "cells" and old in (None, "(absent)"):
            lines.append("cells: not recorded (a folder written before its cells had settings of their own)")
        elif old != new:
            lines.append(f"{key}: {old!r} -> {new!r}")
    return lines


def _run_files(out_dir: Path, cells=None) -> list[Path]:
    if cells is None:
        return sorted((out_dir / "runs").glob("*/run_*.json"))
    return [path for cell in cells for path in sorted((out_dir / "runs" / cell).glob("run_*.json"))]


def _foreign_run_files(out_dir: Path, fingerprint: str | dict, seed: int) -> int:
    """How many run files are of other settings or another seed (unreadable ones are left to the sweep); with
    per-cell fingerprints (``{cell: fingerprint}``), those of these cells only (no other cell's file is read or
    written by this sweep)."""
    cells = fingerprint if isinstance(fingerprint, dict) else None
    foreign = 0
    for path in _run_files(out_dir, cells):
        try:
            document = json.loads(path.read_text())
            expected = cells[path.parent.name] if cells is not None else fingerprint
            if document["fingerprint"] != expected or document["data"]["seed"] != seed:
                foreign += 1
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return foreign


#: what a sweep writes under ``runs/<cell>/`` and ``checkpoints/``: run files (their artifacts are the ones each
#: run file lists), checkpoints (``CELL_run_XXXXX_FINGERPRINT.pt``) and temporary files of interrupted atomic writes
_RUN_FILE = re.compile(r"run_\d{5}\.json")
_CHECKPOINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*_run_\d{5}_[0-9a-f]{16}\.pt")
_TEMPORARY = re.compile(r"\.(run_\d{5}\.|[A-Za-z0-9][A-Za-z0-9._-]*_run_\d{5}_[0-9a-f]{16}\.pt\.).*\.tmp")


def remove_interrupted_writes(out_dir: Path) -> list[Path]:
    """Delete the temporary files of interrupted atomic writes under ``runs/<cell>/`` and ``checkpoints/`` (a run
    file or a checkpoint whose writer was killed before it could clean up: ``kill -9``, a lost machine); returns
    them. Only for the holder of the folder's lock, so that no writer is using them."""
    found, runs = [], out_dir / "runs"
    for folder in [*(sorted(runs.iterdir()) if runs.is_dir() else []), out_dir / "checkpoints"]:
        if folder.is_dir() and not folder.is_symlink():
            found += [path for path in sorted(folder.iterdir()) if path.is_file() and _TEMPORARY.fullmatch(path.name)]
    for path in found:
        path.unlink(missing_ok=True)
    return found


def _artifacts_of(run_file: Path) -> list[Path]:
    try:
        names = json.loads(run_file.read_text())["data"]["artifacts"]
        return [run_file.with_suffix("." + name) for name in names if isinstance(name, str) and "/" not in name]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def library_files(out_dir: Path) -> list[Path]:
    """The files of ``out_dir`` that a sweep wrote, by name: ``runs/<cell>/run_XXXXX.json`` and the artifacts each
    lists (``run_XXXXX.model.pt``), ``checkpoints/<cell>_run_XXXXX_<fingerprint>.pt``, temporary files of
    interrupted writes of those, the outputs the last report listed (``report.json``'s ``files``),
    ``report.json`` and ``sweep.json``. Nothing else: the user's own files in the folder (also under ``runs/`` and
    ``checkpoints/``) are never in it."""
    found = []
    runs = out_dir / "runs"
    if runs.is_dir():
        for cell in sorted(path for path in runs.iterdir() if path.is_dir() and not path.is_symlink()):
            for path in sorted(cell.iterdir()):
                if path.is_file() and not path.is_symlink() and _RUN_FILE.fullmatch(path.name):
                    found += [path, *(artifact for artifact in _artifacts_of(path) if artifact.is_file())]
                elif path.is_file() and _TEMPORARY.fullmatch(path.name):
                    found.append(path)
    checkpoints = out_dir / "checkpoints"
    if checkpoints.is_dir():
        found += [path for path in sorted(checkpoints.iterdir()) if path.is_file() and not path.is_symlink()
                  and (_CHECKPOINT.fullmatch(path.name) or _TEMPORARY.fullmatch(path.name))]
    found += [out_dir / name for name in _previous_outputs(out_dir) if (out_dir / name).is_file()]
    found += [out_dir / name for name in ("report.json", RECORD_NAME) if (out_dir / name).is_file()]
    return found


def _clear(out_dir: Path) -> None:
    """Delete :func:`library_files` and the folders they leave empty under ``runs/`` and ``checkpoints/``."""
    for path in library_files(out_dir):
        path.unlink(missing_ok=True)
    for folder in ("runs", "checkpoints"):
        root = out_dir / folder
        if not root.is_dir():
            continue
        for cell in sorted(root.iterdir()):
            if cell.is_dir() and not cell.is_symlink() and not any(cell.iterdir()):
                cell.rmdir()
        if not any(root.iterdir()):
            root.rmdir()


def recorded_command(out_dir: Path) -> tuple[list[str], str | None] | None:
    """``(argv, working folder)`` of the command that last computed in ``out_dir`` (``sweep.json``), else the one
    that wrote its report (``report.json``, which has no working folder: ``None``); ``None`` where neither records
    one (a sweep run from Python, or written before the record kept it)."""
    for name in (RECORD_NAME, "report.json"):
        try:
            command = json.loads((out_dir / name).read_text()).get("command")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(command, dict):
            argv, cwd = command.get("argv"), command.get("cwd")
        else:
            argv, cwd = command, None
        if isinstance(argv, list) and argv and all(isinstance(part, str) for part in argv):
            return argv, cwd if isinstance(cwd, str) else None
    return None


def _recorded_command(out_dir: Path) -> str:
    """The command line the folder records (``""`` without one), quoted for a shell, with its working folder where
    that is not this one."""
    found = recorded_command(out_dir)
    if found is None:
        return ""
    argv, cwd = found  # relative paths in it (--out) mean that folder's
    return shlex.join(argv) + ("" if cwd is None or cwd == os.getcwd() else f" (from {shlex.quote(cwd)})")


def check_folder(out_dir: Path, settings: dict, fingerprint: str | dict, seed: int, overwrite: bool = False,
                 write: bool = True, cells: dict | None = None, command: list[str] | None = None) -> None:
    """Make sure ``out_dir`` holds nothing but this sweep's runs, and record the sweep in ``sweep.json``.

    Args:
        out_dir: the output folder.
        settings: the experiment's settings; ``fingerprint``: their hash (as in the run files), or ``{cell: the
            fingerprint of its run files}`` for an experiment whose cells have their own settings.
        seed: the sweep's seed.
        overwrite: replace a sweep of other settings, seed or version instead of refusing.
        write: write ``sweep.json`` (``False`` for a report of the saved runs, which changes nothing).
        cells: ``{cell: its own settings}`` of an experiment whose cells have them (``None``: the cells are part of
            ``settings``); the record keeps every cell run here, and only a cell recorded with other settings
            differs.
        command: the command line computing the sweep (``["curteach", "nav", ...]``), recorded with the working
            folder; ``None`` (a sweep run from Python) keeps the recorded one.

    Raises:
        ValueError: the folder holds a sweep of other settings, seed or version (each difference is named), or run
            files of another sweep, and ``overwrite`` is not set.
    """
    settings = json.loads(json.dumps(settings))  # as it reads back from sweep.json (tuples become lists)
    current = {"settings": settings, "seed": seed, "curteach": library_version()}
    if cells is not None:
        current["cells"] = json.loads(json.dumps(cells))
    record_path = out_dir / RECORD_NAME
    recorded_cells: dict = {}
    previous_command = None
    hint = "pass --overwrite to replace it (its runs are deleted), or choose another --out"
    if record_path.exists():
        try:
            record = json.loads(record_path.read_text())
            if record.get("format") != RECORD_FORMAT:
                raise ValueError(f"unknown format {record.get('format')!r}")
        except (OSError, ValueError) as error:
            if not overwrite:
                raise ValueError(
                    f"{record_path} is unreadable ({error}); to keep the runs, delete that file (the folder is then "
                    f"adopted from its checksummed run files), or {hint}") from None
            record = None
        if record is not None:
            differences = _differences({key: record.get(key) for key in current}, current)
            if differences and not overwrite:
                ran = _recorded_command(out_dir)  # what to repeat, e.g. for --report-only of a finished sweep
                raise ValueError(f"{out_dir} holds a sweep of other settings ({'; '.join(differences)}); {hint}"
                                 + (f"; to resume it, repeat its command: {ran}; to report it: curteach report "
                                    f"{shlex.quote(str(out_dir))}" if ran else ""))
            if differences:
                _clear(out_dir)
            else:
                previous_command = record.get("command")
                if cells is not None:
                    recorded_cells = record["cells"]
    else:
        foreign = _foreign_run_files(out_dir, fingerprint, seed)
        if foreign and not overwrite:
            raise ValueError(f"{out_dir} holds {foreign} run file(s) of other settings or another seed; {hint}")
        if foreign:
            _clear(out_dir)
    if cells is not None:  # the cells run before and not now keep their record (and their runs)
        current["cells"] = {**recorded_cells, **current["cells"]}
    new_command = previous_command if command is None else {"argv": [str(part) for part in command],
                                                            "cwd": os.getcwd()}
    if write and (not record_path.exists() or (cells is not None and current["cells"] != recorded_cells)
                  or new_command != previous_command):
        document = {"format": RECORD_FORMAT, **current}
        if new_command is not None:
            document["command"] = new_command
        atomic_write(record_path, lambda stream: json.dump(document, stream, indent=1))


def _previous_outputs(out_dir: Path) -> list[str]:
    """The files the folder's last report wrote (``report.json``'s ``files``), as plain names inside it."""
    try:
        files = json.loads((out_dir / "report.json").read_text()).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [name for name in files if isinstance(name, str) and name and Path(name).name == name]


def remove_stale_outputs(out_dir: Path, produced: list[str]) -> None:
    """Delete the outputs the previous report wrote that this one does not (an old figure of a subset that is
    now empty must not sit beside the new ones). Only names the previous ``report.json`` listed are touched."""
    for name in set(_previous_outputs(out_dir)) - set(produced):
        (out_dir / name).unlink(missing_ok=True)
