"""The logging flags of every sweep command: ``--log-dir DIR`` and ``--log-format stdout,csv,tensorboard[,wandb]``
(see :mod:`curteach_teaching.sweeps.tracking`).

:func:`add_log_arguments` adds them to the sweep group, :func:`check_log_flags` checks them with the other sweep
flags before anything is written, and :func:`run_logger` builds the driver's
:class:`~curteach_teaching.sweeps.tracking.RunLogger` (``None`` without ``--log-dir``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["add_log_arguments", "check_log_flags", "run_logger"]

# tracking.FORMATS and DEFAULT_FORMATS (tests/commands/test_tracking_cli.py checks they agree), written out so that
# building the parser imports no experiment
_FORMATS = ("stdout", "log", "json", "csv", "tensorboard", "wandb")
_DEFAULT_FORMATS = ("csv", "tensorboard")


def add_log_arguments(group) -> None:
    """Add ``--log-dir`` and ``--log-format`` to an argument group (or parser)."""
    group.add_argument("--log-dir", default=None,
                       help="also log every run as it is saved, one folder per compared curve: "
                       "LOG_DIR/<cell>/run_XXXXX/, or LOG_DIR/<teacher>/run_XXXXX/ where the teachers are curves of "
                       "one run (car-irl, teach), so that tensorboard --logdir LOG_DIR overlays them; with "
                       "--report-only: every saved run")
    group.add_argument("--log-format", default=None,
                       help=f"comma-separated output formats of --log-dir: {', '.join(_FORMATS)} (default "
                       f"{','.join(_DEFAULT_FORMATS)}; tensorboard and wandb need pip install "
                       "'curteach[tensorboard]' / 'curteach[wandb]')")


def check_log_flags(args: argparse.Namespace) -> tuple:
    """The formats asked for (empty without ``--log-dir``); ``ValueError`` for ``--log-format`` without
    ``--log-dir``, an unknown or uninstalled format, or a log folder that is a file or cannot be created. Writes
    nothing."""
    log_dir, log_format = getattr(args, "log_dir", None), getattr(args, "log_format", None)
    if log_dir is None:
        if log_format is not None:
            raise ValueError("--log-format needs --log-dir")
        return ()
    from curteach_teaching.sweeps.tracking import DEFAULT_FORMATS, check_formats, parse_formats

    if not str(log_dir).strip():
        raise ValueError("--log-dir must not be empty")
    try:
        formats = DEFAULT_FORMATS if log_format is None else parse_formats(log_format)
        check_formats(formats)
    except ValueError as error:
        message = str(error).replace("log_format ", "--log-format ", 1)
        if log_format is None:
            message += f" (the default --log-format is {','.join(DEFAULT_FORMATS)})"
        raise ValueError(message) from None
    check_folder_to_create(Path(log_dir), f"--log-dir {str(log_dir)!r}", "log folder")
    return formats


def check_folder_to_create(path: Path, named: str, what: str, *, writable: bool = True) -> None:
    """Check a folder a command will create or write into, creating nothing: ``ValueError`` when ``path`` is a file
    (``"{named} is not a folder"``), its nearest existing ancestor is not a folder, or (``writable``) that ancestor
    cannot be written."""
    if path.exists() and not path.is_dir():
        raise ValueError(f"{named} is not a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"cannot create the {what} {path}: {existing} is not a folder")
    if writable and not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write into {existing} (permission denied)")


def run_logger(args: argparse.Namespace, experiment, out: Path, report=None):
    """The driver's :class:`~curteach_teaching.sweeps.tracking.RunLogger` for these flags (``None`` without
    ``--log-dir``); its W&B group is the output folder's name. With the sweep's ``report``, the curves it compares
    within a run (the car's teachers) get a folder each (:meth:`~curteach_teaching.sweeps.reports.Report.
    logged_curves`), under one tag named by its metric."""
    formats = check_log_flags(args)
    if not formats:
        return None
    from curteach_teaching.sweeps.tracking import RunLogger

    return RunLogger(args.log_dir, formats, config=experiment.settings(), group=Path(out).name,
                     curves=None if report is None else report.logged_curves(),
                     metric="value" if report is None else report.metric_name,
                     cell_folders=len(tuple(experiment.cells)) > 1)
