"""The sweep driver: cells x runs, paired seeds, resumable run files.

An *experiment* is any picklable object with

* ``cells``: the names of its cells (tuple of str). A cell is one setting of the experiment: for the car, the whole
  teacher set on one road (a single cell, :data:`~curteach_teaching.sweeps.results.DEFAULT_CELL`); for the
  navigation learner, one curriculum; for a sensitivity study, one learning rate;
* ``settings() -> dict``: its JSON-serialisable settings (hashed into each run file, so files written for other
  settings are never reused);
* ``run_cell(cell, index, seed_sequence) -> RunResult``: run ``index`` of ``cell``, drawing all randomness from
  ``seed_sequence``;
* optionally ``cell_settings(cell) -> dict``: the settings of one cell beyond ``settings()``, which then holds only
  those every cell shares. A cell's run files are then fingerprinted by both, so that cells can be added to, dropped
  from or reordered in a folder's sweep and only the missing runs are computed
  (:func:`~curteach_teaching.sweeps.folders.check_folder`).

Experiments with one setting subclass :class:`SingleCellExperiment` and implement ``run(index, seed_sequence)``.

Run ``i`` of *every* cell gets ``np.random.SeedSequence([seed, i])``, so comparisons between cells are paired (the
same road, the same network initialisation), and no result depends on the number of workers, the backend, the order
in which units finish, or which units were resumed from disk. :func:`run_sweep` skips units whose file
``DIR/runs/<cell>/run_XXXXX.json`` is valid, recomputes missing, corrupt or stale ones (saying why), has a
:mod:`backend <curteach_teaching.sweeps.backends>` compute the rest, and writes each result atomically as soon
as it arrives: workers only compute, the driver writes every file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from curteach_envs._util import atomic_write, check_int, counted
from curteach_teaching.registry import PluginError
from curteach_teaching.sweeps.backends import (
    Backend,
    LostRun,
    ProcessBackend,
    SerialBackend,
    Unit,
    run_seed_sequence,
)
from curteach_teaching.sweeps.folders import check_folder, check_writable, folder_lock, remove_interrupted_writes
from curteach_teaching.sweeps.interrupts import announce, interruption_message
from curteach_teaching.sweeps.ray_backend import RayBackend
from curteach_teaching.sweeps.results import (
    DEFAULT_CELL,
    RunResult,
    check_cell_name,
    fingerprint,
    load_run,
    run_path,
    save_run,
)

__all__ = [
    "BACKENDS",
    "SingleCellExperiment",
    "SweepResult",
    "SweepSession",
    "cell_fingerprints",
    "make_backend",
    "run_seed_sequence",
    "run_sweep",
]


class SingleCellExperiment:
    """Mixin for an experiment with one setting: its only cell is ``"main"``, and ``run_cell`` calls
    ``self.run(index, seed_sequence)``."""

    cells = (DEFAULT_CELL,)

    def run_cell(self, cell: str, index: int, seed_sequence) -> RunResult:
        """Run ``index`` of the only cell (``ValueError`` for another cell name)."""
        if cell != DEFAULT_CELL:
            raise ValueError(f"{type(self).__name__} has the single cell {DEFAULT_CELL!r}; got {cell!r}")
        return self.run(index, seed_sequence)


@dataclass
class SweepResult:
    """Outcome of :func:`run_sweep`.

    Attributes:
        cells: cell name -> its runs (:class:`RunResult`), by index, in the experiment's cell order.
        computed: ``(cell, index)`` units computed in this call, sorted.
        reused: ``(cell, index)`` units loaded from valid run files, sorted.
        invalid: ``(cell, index)`` -> why an existing file was not used (corrupt or stale); those were recomputed.
        seed: the sweep's seed.
    """

    cells: dict
    computed: list = field(default_factory=list)
    reused: list = field(default_factory=list)
    invalid: dict = field(default_factory=dict)
    seed: int | None = None

    @property
    def results(self) -> list:
        """The runs of a single-cell experiment, by index (``ValueError`` for several cells: use :attr:`cells`)."""
        if len(self.cells) != 1:
            raise ValueError(f"this sweep has {len(self.cells)} cells; use sweep.cells[name]")
        return next(iter(self.cells.values()))

    @property
    def all_results(self) -> list:
        """Every run of every cell, cell by cell."""
        return [result for runs in self.cells.values() for result in runs]


#: runs per cell: run files are named with five digits (run_00000 .. run_99999)
MAX_RUNS = 100_000


def _check_cells(experiment) -> tuple:
    cells = tuple(getattr(experiment, "cells", ()))
    if not cells:
        raise ValueError(f"{type(experiment).__name__} has no cells")
    for cell in cells:
        check_cell_name(cell)
    if len(set(cells)) != len(cells):
        raise ValueError(f"cell names must be distinct; got {list(cells)}")
    return cells


def _check_layout(runs_dir: Path) -> None:
    flat = sorted(runs_dir.glob("run_*.json"))
    if flat:
        raise ValueError(
            f"{runs_dir} holds {len(flat)} run file(s) of the old flat layout (runs/run_XXXXX.json, curteach 0.1); "
            f"runs now live in runs/<cell>/. Delete or move that folder, or choose another --out"
        )


def run_sweep(
    experiment,
    out_dir: Path,
    runs: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    backend: Backend | None = None,
    compute: bool = True,
    overwrite: bool = False,
    on_saved: Callable[[RunResult], None] | None = None,
) -> SweepResult:
    """Run (or resume) ``runs`` seeded runs of every cell of ``experiment``, writing ``out_dir/runs/<cell>/``.

    Args:
        experiment: see the module docstring.
        out_dir: output folder.
        runs: runs per cell (indices ``0 .. runs - 1``).
        seed: the sweep's seed.
        workers: parallel processes of the default backend (default: ``min(units to do, CPU count)``); 1 runs in
            this process. Ignored when ``backend`` is given.
        progress: show a progress bar over units (tqdm, on stderr).
        backend: where units are computed (default :class:`~curteach_teaching.sweeps.backends.ProcessBackend`
            with ``workers``).
        compute: ``False`` computes nothing: the result holds only the runs already saved (cells without one are
            left out), e.g. to report on a sweep that is still running.
        overwrite: replace a sweep of other settings, seed or curteach version in ``out_dir`` (its runs are
            deleted) instead of refusing; see :mod:`~curteach_teaching.sweeps.folders`.
        on_saved: called on the driver with each run computed in this call, right after its file is written (e.g.
            :meth:`~curteach_teaching.sweeps.tracking.RunLogger.log_run`); not for runs reused from disk.

    Returns:
        A :class:`SweepResult`.

    Raises:
        ValueError: bad arguments, bad cell names, an output folder that cannot be written, is in use by another
            sweep or holds another sweep (without ``overwrite``), a run folder of the old flat layout, or
            (``compute=False``) no saved run.
        LostRun: a run's worker died more often than the backend retries it; the message ends with how many runs
            are saved (``"N of M runs saved in DIR; run the same command again to resume"``).
    """
    session = SweepSession(out_dir, runs, seed=seed, backend=backend, workers=workers, progress=progress,
                           compute=compute, overwrite=overwrite, on_saved=on_saved)
    return session.run(experiment)  # claims the folder after checking the experiment's cells


class SweepSession:
    """One sweep as a command runs it: its checked arguments, its backend, the output folder's lock and the
    experiment's settings fingerprint, each made once and shared by everything the command does.

    Enter it (``with session:``) to claim the folder (:func:`~curteach_teaching.sweeps.folders.folder_lock`,
    after checking that it can be written; nothing for ``compute=False``, which only reads): a command enters it
    before its own preparations that write into the folder (e.g. a cached dataset), and its :meth:`run` and report
    then happen under that one lock. :meth:`run` outside the block claims the folder for the sweep alone.
    :func:`run_sweep` is a session made, entered and run at once.

    The session owns its run count and seed and checks them once, here; a backend checks its own worker count.

    Args:
        out_dir: the output folder (``DIR/runs/<cell>/``, ``DIR/sweep.json``).
        runs: runs per cell, as in :func:`run_sweep` (so are the arguments below).
        seed: the sweep's seed.
        backend: where units are computed (default: a process pool of ``workers`` processes).
        workers: the default backend's processes (default: the CPU count); ignored when ``backend`` is given.
        progress: show a progress bar over units.
        compute: ``False`` computes and writes nothing (a report of the saved runs).
        overwrite: replace a sweep of other settings in ``out_dir`` instead of refusing.
        on_saved: called with each run computed, right after its file is written.
        command: the command line running the sweep, recorded in ``sweep.json`` (for ``curteach report``).

    Attributes:
        data: what the command prepared for its experiment once (e.g. nav's dataset, loaded and hashed once:
            ``{"dataset": (path, digest, dataset)}``), for the command's own use.

    Raises:
        ValueError: a bad run count, seed or worker count (at once); a folder that cannot be written or is in use
            (on entering).
    """

    def __init__(self, out_dir, runs: int, *, seed: int = 0, backend: Backend | None = None,
                 workers: int | None = None, progress: bool = True, compute: bool = True, overwrite: bool = False,
                 on_saved: Callable[[RunResult], None] | None = None, command: list[str] | None = None):
        check_int("runs", runs, 1, MAX_RUNS)
        check_int("seed", seed, 0)
        self.out_dir = Path(out_dir)
        self.runs = runs
        self.seed = seed
        self.backend = backend if backend is not None else ProcessBackend(workers)
        self.progress = progress
        self.compute = compute
        self.overwrite = overwrite
        self.on_saved = on_saved
        self.command = command
        self.data: dict = {}
        self._lock = None
        self._fingerprint: tuple | None = None  # (experiment, settings, fingerprints, cells' own settings)

    @property
    def claimed(self) -> bool:
        """Whether this session holds the output folder (inside ``with session:``, computing)."""
        return self._lock is not None

    def __enter__(self) -> SweepSession:
        if self._lock is not None:
            raise RuntimeError("this sweep session already holds its folder (enter it once)")
        if self.compute:
            check_writable(self.out_dir)
            lock = folder_lock(self.out_dir)
            lock.__enter__()
            self._lock = lock
        return self

    def __exit__(self, *exc_info) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.__exit__(*exc_info)

    def fingerprint(self, experiment) -> tuple[dict, dict]:
        """``(settings, {cell: fingerprint of its run files})`` of ``experiment``, computed once per session (a
        session runs one experiment: ``ValueError`` for another); see :func:`cell_fingerprints`."""
        settings, fingerprints, _ = self._settings(experiment)
        return settings, fingerprints

    def _settings(self, experiment) -> tuple[dict, dict, dict | None]:
        """``(settings, fingerprints, each cell's own settings or None)``, computed once per session."""
        if self._fingerprint is None:
            settings = experiment.settings()
            self._fingerprint = (experiment, settings, *_fingerprints_and_cells(experiment, settings))
        elif self._fingerprint[0] is not experiment:
            raise ValueError("a sweep session runs one experiment; start another session for another")
        return self._fingerprint[1:]

    def run(self, experiment) -> SweepResult:
        """Run (or resume) the sweep of ``experiment`` (see :func:`run_sweep`, which this is); outside ``with
        session:`` the folder is claimed for this call, after the experiment's cells are checked."""
        cells = _check_cells(experiment)
        if self.compute and not self.claimed:
            with self:
                return _run_sweep(self, experiment, cells)
        return _run_sweep(self, experiment, cells)


def cell_fingerprints(experiment, settings: dict) -> dict:
    """``{cell: the fingerprint of its run files}``: the settings' for every cell, or, for an experiment whose cells
    have their own settings (``cell_settings``), the hash of ``{"sweep": settings, "cell": cell_settings(cell)}``."""
    return _fingerprints_and_cells(experiment, settings)[0]


def _fingerprints_and_cells(experiment, settings: dict) -> tuple[dict, dict | None]:
    """``(cell_fingerprints, {cell: cell_settings(cell)})``, the second ``None`` for an experiment without
    ``cell_settings`` (each cell's settings computed once, for both)."""
    own = getattr(experiment, "cell_settings", None)
    if own is None:
        shared = fingerprint(settings)
        return {cell: shared for cell in experiment.cells}, None
    cells = {cell: own(cell) for cell in experiment.cells}
    return {cell: fingerprint({"sweep": settings, "cell": cells[cell]}) for cell in experiment.cells}, cells


def _run_sweep(session: SweepSession, experiment, cells: tuple) -> SweepResult:
    out_dir, runs, seed, compute = session.out_dir, session.runs, session.seed, session.compute
    runs_dir = out_dir / "runs"
    if not compute and not runs_dir.is_dir():
        raise ValueError(f"{out_dir} holds no finished run of these settings yet")
    if runs_dir.is_dir():
        _check_layout(runs_dir)
    settings, fingerprints, own = session._settings(experiment)
    check_folder(out_dir, settings, fingerprints if own is not None else fingerprints[cells[0]], seed,
                 overwrite=session.overwrite, write=compute,
                 cells=None if own is None else {cell: own[cell] for cell in cells}, command=session.command)

    sweep = SweepResult(cells={cell: [None] * runs for cell in cells}, seed=seed)
    todo = []
    for cell in cells if compute else ():  # a report of the saved runs writes and deletes nothing
        (runs_dir / cell).mkdir(parents=True, exist_ok=True)
    if compute:  # leftovers of an interrupted write of this folder's sweep (the lock keeps any other sweep out)
        remove_interrupted_writes(out_dir)
    # run-major order: run 0 of every cell first, so that a sweep stopped early still holds paired runs
    for index in range(runs):
        for cell in cells:
            # a report reads no artifact: it stands without them (model weights kept out of a repository)
            result, reason = load_run(run_path(out_dir, index, cell), fingerprints[cell], index, cell,
                                      artifacts=compute)
            if result is not None and result.seed == seed:
                sweep.cells[cell][index] = result
                sweep.reused.append((cell, index))
                continue
            if result is not None:
                reason = f"written with seed {result.seed}"
            if reason != "missing":
                sweep.invalid[(cell, index)] = reason
                where = f"run {index}" if cells == (DEFAULT_CELL,) else f"cell {cell!r} run {index}"
                action = "recomputing" if compute else "left out of the report"
                print(f"{where}: existing file not used ({reason}); {action}", file=sys.stderr)
            todo.append(Unit(cell, index, int(seed)))

    if not compute:
        sweep.cells = {cell: [r for r in found if r is not None] for cell, found in sweep.cells.items()}
        sweep.cells = {cell: found for cell, found in sweep.cells.items() if found}
        if not sweep.cells:
            raise ValueError(f"{out_dir} holds no finished run of these settings yet")
        return sweep

    from tqdm import tqdm

    total = len(cells) * runs
    bar = tqdm(total=total, initial=len(sweep.reused), desc="runs", unit="run", disable=not session.progress,
               file=sys.stderr)

    def saved() -> str:
        count = len(sweep.reused) + len(sweep.computed)
        return f"{count} of {counted(total, 'run')} saved in {out_dir}; run the same command again to resume"

    def interrupted() -> str:
        return f"interrupted: {saved()}"

    with interruption_message(interrupted):
        try:
            for unit, result in session.backend.run_units(experiment, todo) if todo else ():
                save_run(run_path(out_dir, unit.index, unit.cell), result, fingerprints[unit.cell])
                sweep.cells[unit.cell][unit.index] = result
                sweep.computed.append((unit.cell, unit.index))
                if session.on_saved is not None:
                    session.on_saved(result)
                bar.update()
        except KeyboardInterrupt:
            bar.close()
            announce()
            raise
        except LostRun as lost:
            bar.close()
            raise LostRun(lost.unit, lost.attempts, lost.cause, saved=saved()) from None
        except PluginError as error:  # one line; the plug-in's traceback in a file beside the runs
            bar.close()
            log, message, details = out_dir / "errors.log", error.message, error.details
            atomic_write(log, lambda stream: stream.write(f"{message}\n\n{details}"))
            raise PluginError(f"{message} (its traceback: {log}; {saved()})", details) from None
        finally:
            bar.close()
    sweep.computed.sort(key=lambda unit: (cells.index(unit[0]), unit[1]))
    sweep.reused.sort(key=lambda unit: (cells.index(unit[0]), unit[1]))
    return sweep


#: ``--backend`` names -> classes.
BACKENDS = {"serial": SerialBackend, "processes": ProcessBackend, "ray": RayBackend}


def make_backend(
    name: str = "processes",
    workers: int | None = None,
    ray_address: str | None = None,
    gpus_per_run: float = 0.0,
) -> Backend:
    """The backend called ``name`` (``"serial"``, ``"processes"`` or ``"ray"``), sized by ``workers`` where that
    applies; ``ray_address`` and ``gpus_per_run`` configure the Ray backend."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}; got {name!r}")
    if workers is not None:
        check_int("workers", workers, 1)
    if name != "ray" and (ray_address is not None or gpus_per_run):
        raise ValueError(f"ray_address and gpus_per_run apply to the ray backend only; got backend {name!r}")
    if name == "serial":
        return SerialBackend()
    if name == "ray":
        return RayBackend(address=ray_address, workers=workers, gpus_per_run=gpus_per_run)
    return ProcessBackend(workers)
