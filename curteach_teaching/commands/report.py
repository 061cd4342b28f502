"""``curteach report DIR``: the report of a sweep's folder by the command the folder records.

``--report-only`` needs every setting flag of the sweep repeated (another ``--lr`` is another sweep); a folder made by
one of the sweep commands records the command line that computed in it (``sweep.json``; folders from before that
record: the one that wrote ``report.json``). This command parses that line with its own command's parser, asks it
for a report of the saved runs (``--report-only``, computing nothing) into ``DIR`` as given now (a moved folder
included), and runs it from the recorded working folder where that still exists, so that relative paths (``--dataset
data/x.hdf5``) mean what they meant. Where the runs are computed (``--workers``, ``--backend``, Ray, GPU shares) and
run logging (``--log-dir``) are dropped: a report computes and logs nothing. ``--no-figures`` and ``--no-progress``
are this command's own. Any other flag given after ``DIR`` is added to the recorded line (last wins): a report
option such as ``dataset-bc``'s ``--paired-against``; a setting given so is another sweep's, and refused as such.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: flags of the recorded line that do not go into a report: (flag, takes a value)
_DROPPED = (("--out", True), ("--overwrite", False), ("--report-only", False), ("--no-figures", False),
            ("--no-progress", False), ("--log-dir", True), ("--log-format", True), ("--backend", True),
            ("--ray-address", True), ("--workers", True), ("--gpus-per-run", True))
#: what a report resets in the parsed namespace: nothing is computed, placed or logged
_REPORT_VALUES = {"report_only": True, "overwrite": False, "backend": "serial", "ray_address": None, "workers": None,
                  "gpus_per_run": 0.0, "log_dir": None}


def add_parser(subparsers) -> None:
    """Register ``curteach report``."""
    parser = subparsers.add_parser(
        "report",
        usage="curteach report [-h] [--no-figures] [--no-progress] [--dry-run] DIR [FLAG ...]",
        help="write a sweep folder's summary, report and figures from the command it records (no flags repeated)",
        description="Reads the command line recorded in DIR/sweep.json (or DIR/report.json) and runs it with "
        "--report-only into DIR: the summary, report.json and figures of the runs saved so far, computing nothing "
        "(e.g. while the sweep still runs elsewhere). Prints the command it runs. Further flags are added to the "
        "recorded line, e.g. a report option: curteach report DIR --paired-against Cur-T",
    )
    parser.passes_on_unknown = True  # the flags it does not know are the recorded command's (cli's parse_args)
    parser.add_argument("folder", type=Path, metavar="DIR", help="a sweep's output folder")
    parser.add_argument("--no-figures", action="store_true", help="skip the figures")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument("--dry-run", action="store_true", help="print the command it would run, and stop")
    # the recorded line is parsed by its own command's parser; the dict fills as the other commands register and
    # is read only when this one runs
    parser.set_defaults(func=lambda args: run_report(args, subparsers.choices))


def report_command(argv: list[str], folder: Path) -> list[str]:
    """The recorded command line ``argv`` (``["curteach", COMMAND, ...]``) as a report into ``folder``: the flags of
    :data:`_DROPPED` removed (``--flag value`` and ``--flag=value``), ``--report-only --out FOLDER`` added."""
    kept, skip = [], False
    for part in argv:
        if skip:
            skip = False
            continue
        name = part.split("=", 1)[0]
        match = next((takes for flag, takes in _DROPPED if name == flag), None)
        if match is None:
            kept.append(part)
        elif match and "=" not in part:
            skip = True
    return [*kept, "--report-only", "--out", str(folder)]


@contextmanager
def _working_folder(path: str | None) -> Iterator[None]:
    """Run the block in ``path`` (``None``: here), and come back."""
    if path is None:
        yield
        return
    here = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def run_report(args: argparse.Namespace, commands: dict) -> int:
    """Run the recorded command of ``args.folder`` with ``--report-only``; its exit code.

    Args:
        args: the parsed flags of ``curteach report``.
        commands: ``{command name: its parser}`` of every ``curteach`` command.

    Raises:
        ValueError: the folder is not a sweep's, records no command, or records a command that is not a sweep.
    """
    from curteach_teaching.sweeps.folders import RECORD_NAME, recorded_command

    folder = args.folder.resolve()  # the recorded line may run from another working folder
    if not (folder / RECORD_NAME).is_file():
        raise ValueError(f"{args.folder} is not a sweep's folder (it has no {RECORD_NAME})")
    found = recorded_command(folder)
    if found is None:
        raise ValueError(f"{args.folder} records no command (its sweep ran from Python, or was written by a curteach "
                         "before the record kept one); repeat its command with --report-only")
    argv, cwd = found
    parser = commands.get(argv[1]) if len(argv) > 1 else None
    if argv[0] != "curteach" or parser is None:
        raise ValueError(f"{args.folder} records {shlex.join(argv)!r}, which is not a curteach command")
    if cwd is not None and not Path(cwd).is_dir():
        print(f"(the recorded working folder {cwd} is gone: relative paths in the command resolve from here)")
        cwd = None
    added = getattr(args, "passed_on", [])  # the flags after DIR that report does not know
    line = [*report_command(argv, folder), *added]
    print(f"report of {args.folder} by its recorded command{'' if cwd is None else f' (in {cwd})'}:")
    print(f"  {shlex.join(line)}")
    if args.dry_run:
        return 0
    with _working_folder(cwd):
        inner = parser.parse_args(line[2:])
        if not hasattr(inner, "report_only"):
            raise ValueError(f"{args.folder} records `curteach {argv[1]}`, which is not a sweep")
        for name, value in _REPORT_VALUES.items():
            if hasattr(inner, name):
                setattr(inner, name, value)
        inner.out = str(folder)
        inner.no_figures = inner.no_figures or args.no_figures  # given before DIR, or after it
        inner.no_progress = inner.no_progress or args.no_progress
        # report.json's line stays the one that made the runs (an older folder records it nowhere else)
        inner.command_line = [*argv, *added]
        return inner.func(inner)
