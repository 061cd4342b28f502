"""Experiment logging: every run of a sweep written through Stable-Baselines3's logger output formats (``stdout``,
``log``, ``json``, ``csv``, ``tensorboard``) and imitation's Weights & Biases writer (``wandb``), with the format
names they use.

Logging lives with the sweep's driver: workers (processes or Ray tasks) only return results, and the driver logs a
run right after it saved the run's file (the ``on_saved`` hook of
:func:`~curteach_teaching.sweeps.sweep.run_sweep`), so it works on every backend. A run is logged once, when it
is computed; runs reused from disk by a resumed sweep are not logged again, and ``--report-only`` with ``--log-dir``
logs every saved run (e.g. a sweep computed without ``--log-dir``).

TensorBoard overlays the curves of *runs* (folders) under one *tag*, so each compared curve gets a folder of its
own: ``LOG_DIR/<cell>/run_00003/`` where the cells are what is compared (the navigation curricula, the trainer and
curriculum of car-trainers, the learning rates of a sensitivity sweep), and ``LOG_DIR/[<cell>/]<curve>/run_00003/``
where each run holds the compared curves itself (the car's teachers: ``LOG_DIR/Agn/run_00003/``,
``LOG_DIR/Cur/run_00003/``, the cell level only when there are several cells). Such a curve is logged under one tag
for all (``curves/<metric>``, e.g. ``curves/expected_reward``), and what else names it loses that name
(``picks/Cur`` is ``picks`` in Cur's folder, ``extras/diverged/Cur`` is ``extras/diverged``); the run's other scalars
(``extras/expert_reward``) go into every curve's folder. Logging a run again replaces what the library wrote there
before (its event files, ``progress.csv``, ``progress.json``, ``log.txt``), so a folder always holds one copy of its
run. The scalars are those of :func:`~curteach_teaching.sweeps.run_scalars.run_scalars`, written at their steps;
``progress.csv`` has a ``step`` column besides them. ``stdout`` prints one table per folder: its last value of every
scalar. TensorBoard stores scalars as 32-bit floats; ``progress.csv`` and ``progress.json`` keep every digit.

``tensorboard`` needs ``pip install 'curteach[tensorboard]'``, ``wandb`` ``pip install 'curteach[wandb]'`` (then
``wandb login``, or ``WANDB_MODE=offline``); :func:`check_formats` refuses them, before anything is written, when
they are not installed. Each run folder is one W&B run named like it (``<cell>/run_00003``, ``Cur/run_00003``) in the
project ``$WANDB_PROJECT`` (default ``curteach``), grouped by the sweep's output folder, with the experiment's settings
as its config.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.run_scalars import run_scalars, tag_of_curve

__all__ = ["DEFAULT_FORMATS", "FORMATS", "RunLogger", "check_formats", "parse_formats", "rows_by_curve"]

#: The output formats (Stable-Baselines3's names, and imitation's ``wandb``).
FORMATS = ("stdout", "log", "json", "csv", "tensorboard", "wandb")
#: ``--log-format`` when only ``--log-dir`` is given.
DEFAULT_FORMATS = ("csv", "tensorboard")
#: What each optional format needs: format -> (module, extra).
_NEEDS = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb")}
#: Files of a run folder that a format writes (removed before the run is logged again).
_WRITTEN = ("events.out.tfevents.*", "progress.csv", "progress.json", "log.txt")


def parse_formats(text: str | Iterable[str]) -> tuple:
    """``"csv,tensorboard"`` (or a sequence of names) as a tuple of distinct format names, in the given order;
    ``ValueError`` for an unknown or empty list."""
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else [str(n).strip() for n in text]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise ValueError(f"log_format must be a comma-separated list of {', '.join(FORMATS)}; got {text!r}")
    return tuple(dict.fromkeys(names))


def check_formats(formats: Iterable[str]) -> None:
    """``ValueError`` (one line: what to install) for each format whose package is not installed."""
    for name in formats:
        if name in _NEEDS:
            module, extra = _NEEDS[name]
            if importlib.util.find_spec(module) is None:
                raise ValueError(f"log_format {name} needs the {module} package, which is not installed: "
                                 f"pip install 'curteach[{extra}]' (or leave {name} out of --log-format)")


def rows_by_curve(rows: Sequence, curves: Sequence[str], metric: str = "value") -> dict[str, list]:
    """A run's ``(step, tag, value)`` rows split into one list per compared curve (module docstring): a tag that
    names a curve (a segment after the first equal to its name) goes to that curve without the segment (``picks/Cur``
    -> ``picks``), the curve itself under ``metric`` (``curves/Cur`` -> ``curves/<metric>``); every other row goes to
    each curve.

    Args:
        rows: :func:`~curteach_teaching.sweeps.run_scalars.run_scalars` of a run.
        curves: the compared curves' names (e.g. the teachers).
        metric: what the curves measure (``"expected reward"``), as a tag segment (``expected_reward``).
    """
    metric = re.sub(r"[^A-Za-z0-9_.-]+", "_", metric).strip("_") or "value"
    split: dict[str, list] = {curve: [] for curve in curves}
    for step, tag, value in rows:
        parts = tag.split("/")
        owner = next((curve for curve in curves if curve in parts[1:]), None)
        if owner is None:
            for curve in curves:
                split[curve].append((step, tag, value))
            continue
        parts.pop(parts.index(owner, 1))
        split[owner].append((step, "/".join([*parts, metric] if tag == tag_of_curve(owner) else parts), value))
    return split


class RunLogger:
    """Logs runs into ``log_dir/<cell>/run_XXXXX/``, or one folder per compared curve (see the module docstring).

    Args:
        log_dir: the log folder (created when the first run is logged).
        formats: output format names (:data:`FORMATS`; checked with :func:`check_formats`).
        config: the experiment's settings (W&B's run config).
        group: the W&B group (e.g. the sweep's output folder name).
        stream: where ``stdout`` prints (default ``sys.stdout``).
        curves: the curves a run holds that are compared with each other (the car's teachers): each gets its own
            folder ``[<cell>/]<curve>/run_XXXXX/`` and the tag ``curves/<metric>``; ``None`` (default): the cells are
            what is compared, one folder per cell and run.
        metric: what those curves measure (e.g. the report's ``"expected reward"``).
        cell_folders: with ``curves``, whether the folders start with the cell (several cells); without ``curves``
            they always do.
    """

    def __init__(self, log_dir: Path | str, formats: Iterable[str] = DEFAULT_FORMATS, *, config: dict | None = None,
                 group: str | None = None, stream=None, curves: Sequence[str] | None = None, metric: str = "value",
                 cell_folders: bool = True):
        self.formats = parse_formats(formats)
        check_formats(self.formats)
        self.log_dir = Path(log_dir)
        self.config = {} if config is None else dict(config)
        self.group = group
        self.stream = stream
        self.curves = None if curves is None else list(curves)
        self.metric = metric
        self.cell_folders = cell_folders

    def run_folder(self, result: RunResult, curve: str | None = None) -> Path:
        """``log_dir/<cell>/run_00003/`` of a run, or of one of its compared curves ``log_dir/[<cell>/]<curve>/
        run_00003/``."""
        name = f"run_{int(result.index):05d}"
        if curve is None:
            return self.log_dir / result.cell / name
        return (self.log_dir / result.cell if self.cell_folders else self.log_dir) / curve / name

    def log_run(self, result: RunResult) -> list[Path]:
        """Write one run's scalars in every format (replacing an earlier log of it); returns the folders written (its
        folder, or one per compared curve)."""
        rows = run_scalars(result)
        curves = [curve for curve in self.curves or () if curve in result.curves]
        if not curves:
            self._write(result, self.run_folder(result), rows)
            return [self.run_folder(result)]
        for curve, curve_rows in rows_by_curve(rows, curves, self.metric).items():
            self._write(result, self.run_folder(result, curve), curve_rows)
        return [self.run_folder(result, curve) for curve in curves]

    def _write(self, result: RunResult, folder: Path, rows: list) -> None:
        from stable_baselines3.common import logger as sb_logger

        folder.mkdir(parents=True, exist_ok=True)
        for pattern in _WRITTEN:
            for stale in folder.glob(pattern):
                stale.unlink()
        writers = [sb_logger.make_output_format(name, str(folder)) for name in self.formats
                   if name not in ("stdout", "wandb")]
        name = folder.relative_to(self.log_dir).as_posix()
        if "wandb" in self.formats:
            writers.append(self._wandb_writer(result, folder, name))
        logger = sb_logger.Logger(folder=str(folder), output_formats=writers)
        try:
            for step, values in _by_step(rows):
                logger.record("step", step, exclude=("tensorboard", "wandb"))
                for tag, value in values.items():
                    logger.record(tag, value)
                logger.dump(step)
        finally:
            logger.close()
        if "stdout" in self.formats:
            self._print_final(name, rows)

    def log_all(self, results: Iterable[RunResult]) -> int:
        """Log every run of ``results`` (e.g. ``sweep.all_results``); returns how many."""
        count = 0
        for result in results:
            self.log_run(result)
            count += 1
        return count

    def _wandb_writer(self, result: RunResult, folder: Path, name: str):
        import wandb
        from imitation.util.logger import WandbOutputFormat

        wandb.init(project=os.environ.get("WANDB_PROJECT", "curteach"), group=self.group, name=name, dir=str(folder),
                   config={**self.config, "cell": result.cell, "run": int(result.index), "seed": int(result.seed)})
        return WandbOutputFormat()  # its close() finishes the W&B run

    def _print_final(self, name: str, rows: list) -> None:
        from stable_baselines3.common.logger import HumanOutputFormat

        final = {"run": name}
        for step, tag, value in rows:
            final[tag] = value
            final["step"] = step
        HumanOutputFormat(self.stream if self.stream is not None else sys.stdout, max_length=60).write(
            final, dict.fromkeys(final), step=final.get("step", 0))


def _by_step(rows: list):
    """``(step, {tag: value})`` in step order; a tag seen twice at one step starts a second write of that step."""
    current_step, values = None, {}
    for step, tag, value in rows:
        if values and (step != current_step or tag in values):
            yield current_step, values
            values = {}
        current_step = step
        values[tag] = value
    if values:
        yield current_step, values
