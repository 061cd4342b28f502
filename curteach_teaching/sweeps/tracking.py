"""Experiment logging: every run of a sweep written through Stable-Baselines3's logger output formats (``stdout``,
``log``, ``json``, ``csv``, ``tensorboard``) and imitation's Weights & Biases writer (``wandb``), with the format
names they use.

Logging lives with the sweep's driver: workers (processes or Ray tasks) only return results, and the driver logs a
run right after it saved the run's file (the ``on_saved`` hook of
:func:`~curteach_teaching.sweeps.sweep.run_sweep`), so it works on every backend. A run is logged once, when it
is computed; runs reused from disk by a resumed sweep are not logged again, and ``--report-only`` with ``--log-dir``
logs every saved run (e.g. a sweep computed without ``--log-dir``).

Each run gets its own folder ``LOG_DIR/<cell>/run_00003/``, so TensorBoard lists the cells (the navigation
curricula, the learning rates of a sensitivity sweep, ...) and runs side by side; logging a run again replaces what
the library wrote there before (its event files, ``progress.csv``, ``progress.json``, ``log.txt``), so a folder
always holds one copy of its run. The scalars are those of
:func:`~curteach_teaching.sweeps.run_scalars.run_scalars`, written at their steps; ``progress.csv`` has a
``step`` column besides them. ``stdout`` prints one table per run: the run's last value of every scalar. TensorBoard
stores scalars as 32-bit floats; ``progress.csv`` and ``progress.json`` keep every digit.

``tensorboard`` needs ``pip install 'curteach[tensorboard]'``, ``wandb`` ``pip install 'curteach[wandb]'`` (then
``wandb login``, or ``WANDB_MODE=offline``); :func:`check_formats` refuses them, before anything is written, when
they are not installed. Each run is one W&B run named ``<cell>/run_00003`` in the project ``$WANDB_PROJECT`` (default
``curteach``), grouped by the sweep's output folder, with the experiment's settings as its config.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.run_scalars import run_scalars

__all__ = ["DEFAULT_FORMATS", "FORMATS", "RunLogger", "check_formats", "parse_formats"]

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


class RunLogger:
    """Logs runs into ``log_dir/<cell>/run_XXXXX/`` (see the module docstring).

    Args:
        log_dir: the log folder (created when the first run is logged).
        formats: output format names (:data:`FORMATS`; checked with :func:`check_formats`).
        config: the experiment's settings (W&B's run config).
        group: the W&B group (e.g. the sweep's output folder name).
        stream: where ``stdout`` prints (default ``sys.stdout``).
    """

    def __init__(self, log_dir: Path | str, formats: Iterable[str] = DEFAULT_FORMATS, *, config: dict | None = None,
                 group: str | None = None, stream=None):
        self.formats = parse_formats(formats)
        check_formats(self.formats)
        self.log_dir = Path(log_dir)
        self.config = {} if config is None else dict(config)
        self.group = group
        self.stream = stream

    def run_folder(self, result: RunResult) -> Path:
        """``log_dir/<cell>/run_00003/`` of a run."""
        return self.log_dir / result.cell / f"run_{int(result.index):05d}"

    def log_run(self, result: RunResult) -> Path:
        """Write one run's scalars in every format (replacing an earlier log of it); returns its folder."""
        from stable_baselines3.common import logger as sb_logger

        folder = self.run_folder(result)
        folder.mkdir(parents=True, exist_ok=True)
        for pattern in _WRITTEN:
            for stale in folder.glob(pattern):
                stale.unlink()
        rows = run_scalars(result)
        writers = [sb_logger.make_output_format(name, str(folder)) for name in self.formats
                   if name not in ("stdout", "wandb")]
        if "wandb" in self.formats:
            writers.append(self._wandb_writer(result, folder))
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
            self._print_final(result, rows)
        return folder

    def log_all(self, results: Iterable[RunResult]) -> int:
        """Log every run of ``results`` (e.g. ``sweep.all_results``); returns how many."""
        count = 0
        for result in results:
            self.log_run(result)
            count += 1
        return count

    def _wandb_writer(self, result: RunResult, folder: Path):
        import wandb
        from imitation.util.logger import WandbOutputFormat

        wandb.init(project=os.environ.get("WANDB_PROJECT", "curteach"), group=self.group,
                   name=f"{result.cell}/run_{int(result.index):05d}", dir=str(folder),
                   config={**self.config, "cell": result.cell, "run": int(result.index), "seed": int(result.seed)})
        return WandbOutputFormat()  # its close() finishes the W&B run

    def _print_final(self, result: RunResult, rows: list) -> None:
        from stable_baselines3.common.logger import HumanOutputFormat

        final = {"run": f"{result.cell}/run_{int(result.index):05d}"}
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
