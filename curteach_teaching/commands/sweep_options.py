"""The flags every sweep command shares, and running a sweep from them.

Every sweep command calls :func:`add_sweep_arguments` on its parser, so ``--runs --seed --workers --out --overwrite
--no-progress --no-figures --report-only --backend --ray-address --gpus-per-run --log-dir --log-format`` (and
``--device`` for the commands that train a network: nav, dataset-bc, car-bc, car-bc-sensitivity, car-trainers) mean
the same everywhere (the logging flags: :mod:`~curteach_teaching.commands.log_options`); the car commands add their
shared ``--init --steps --teachers`` with :func:`add_car_arguments`.

A command parses its flags into the objects that own them, each of which checks its values once, without writing
anything: :func:`check_sweep_flags` builds the backend once (which checks ``--workers``) and reaches the Ray address;
the command builds its experiment's settings and checks the output folder; :func:`sweep_session` builds the
:class:`~curteach_teaching.sweeps.sweep.SweepSession` (which checks ``--runs`` and ``--seed``). Only then does
:func:`run_sweep_command` claim the folder and run the sweep, so a refused command leaves the folder as it was.
The session is one per command: the backend, the folder's lock and the settings' fingerprint, each made once; a
command that prepares files in the folder first (nav's cached dataset) enters the session itself and hands it on.
"""

from __future__ import annotations

import argparse
import re
from contextlib import contextmanager
from pathlib import Path

from curteach_teaching.commands.log_options import (
    add_log_arguments,
    check_folder_to_create,
    check_log_flags,
    run_logger,
)

__all__ = [
    "add_car_arguments",
    "add_sweep_arguments",
    "check_sweep_flags",
    "named_as_options",
    "output_folder",
    "progress_wanted",
    "run_sweep_command",
    "sweep_session",
]


@contextmanager
def named_as_options(args: argparse.Namespace, renamed: dict[str, str] | None = None):
    """Within the block, a ``ValueError`` whose message starts with a setting's name (``teaching_rate must be
    ...``) names the command-line option instead (``--teaching-rate must be ...``), where the command has one:
    the flag of the same name, or the one ``renamed`` gives (``{"n_per_start": "demos_per_start"}`` for
    ``--demos-per-start``)."""
    try:
        yield
    except ValueError as error:
        message = str(error)
        match = re.match(r"([a-z][a-z_]*) must ", message)
        if match:
            flag = (renamed or {}).get(match.group(1), match.group(1))
            if hasattr(args, flag):
                message = "--" + flag.replace("_", "-") + message[match.end(1):]
        raise ValueError(message) from None


def progress_wanted(args: argparse.Namespace) -> bool:
    """Progress bars unless ``--no-progress``, and only on a terminal: a log written to a file gets no redrawn bars
    (tqdm draws on standard error)."""
    import sys

    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


def output_folder(args: argparse.Namespace, default: str | Path) -> Path:
    """``--out`` as a path, or ``default`` when it is not given; ``ValueError`` for an empty ``--out`` (which would
    otherwise mean the current folder), a path that is a file, or a folder that could not be created or written.
    Nothing is created here."""
    out = Path(default) if args.out is None else Path(args.out)
    if args.out is not None and not str(args.out).strip():
        raise ValueError("--out must not be empty")
    check_folder_to_create(out, f"--out {str(out)!r}", "output folder",
                           writable=not getattr(args, "report_only", False))
    return out


def add_car_arguments(parser: argparse.ArgumentParser, *, init: str | None, steps: int, teachers=None,
                      init_help: str = "") -> None:
    """Add the car commands' shared ``--init`` (unless ``init`` is ``None``), ``--steps`` and ``--teachers`` (when
    ``teachers``, the names a user may pick from, is given; default all)."""
    group = parser.add_argument_group("car")
    if init is not None:
        group.add_argument("--init", default=init,
                           help=f"pre-training tasks: T0 or T0-T3 {init_help}(default {init})".replace("  ", " "))
    group.add_argument("--steps", type=int, default=steps, help=f"teaching steps per run (default {steps})")
    if teachers is not None:
        group.add_argument("--teachers", default=",".join(teachers),
                           help=f"comma-separated subset of {','.join(teachers)}, and plug-ins as module:attr or "
                           "entry points of curteach.teachers (default all built-ins)")


def add_realizable_arguments(parser: argparse.ArgumentParser, *, drawn: str, gamma_note: str = "") -> None:
    """Add the realizable-learner commands' ``--theta-scale`` (``drawn``: what is drawn, e.g. ``"theta*"``),
    ``--mdp`` and ``--gamma`` (``gamma_note`` ends its help)."""
    parser.add_argument("--theta-scale", type=float, default=1.0,
                        help=f"{drawn} this times standard normal draws (default 1)")
    parser.add_argument("--mdp", choices=("car", "random"), default="car",
                        help="car: a fresh car road per run (default); random: a small random deterministic MDP of 6 "
                        "tasks, 5 levels, 3 states per level, 4 features")
    parser.add_argument("--gamma", type=float, default=0.99, help=f"discount (default 0.99){gamma_note}")


def car_init(args: argparse.Namespace) -> int:
    """``--init`` as the number of pre-training task types (:func:`curteach_envs.car.parse_init`: ``"T0"`` -> 1), or
    ``ValueError`` naming the flag."""
    from curteach_envs.car import INIT_CHOICES, parse_init

    if args.init not in INIT_CHOICES:
        raise ValueError(f"--init must be one of {list(INIT_CHOICES)}; got {args.init!r}")
    return parse_init(args.init)


def teacher_names(args: argparse.Namespace) -> tuple:
    """``--teachers`` as a tuple of names (the experiment checks them)."""
    return tuple(name.strip() for name in args.teachers.split(",") if name.strip())


def add_sweep_arguments(parser: argparse.ArgumentParser, default_runs: int, default_out: str, *,
                        device: bool = False) -> None:
    """Add the shared sweep flags to ``parser``.

    Args:
        parser: a sub-command's parser.
        default_runs: the default of ``--runs``.
        default_out: how the default output folder is described in ``--out``'s help.
        device: the command trains a network: add ``--device`` (:mod:`~curteach_teaching.sweeps.devices`; resolved
            by :func:`check_sweep_flags` into ``args.sweep_device``).
    """
    group = parser.add_argument_group("sweep")
    if device:
        from curteach_teaching.sweeps.devices import DEVICES

        group.add_argument("--device", choices=DEVICES, default="cpu",
                           help="where each run's network trains and is evaluated: cpu (default), cuda (a GPU; in the "
                           "process pool worker k takes GPU k-1 modulo the GPUs) or auto (cuda if torch sees one)")
    group.add_argument("--runs", type=int, default=default_runs,
                       help=f"runs per cell (default {default_runs}); a rerun skips runs already saved")
    group.add_argument("--seed", type=int, default=0,
                       help="sweep seed; run i of every cell uses SeedSequence([seed, i]) (default 0)")
    group.add_argument("--workers", type=int, default=None, help="parallel processes (default: CPU count)")
    group.add_argument("--out", default=None, help=f"output folder (default {default_out})")
    group.add_argument("--overwrite", action="store_true",
                       help="replace a sweep of other settings, seed or curteach version in the output folder (its "
                       "runs are deleted) instead of refusing")
    group.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    group.add_argument("--no-figures", action="store_true", help="skip the figures")
    group.add_argument("--report-only", action="store_true",
                       help="compute nothing: write the summary, report and figures of the runs saved so far (e.g. "
                       "while the sweep still runs elsewhere)")
    group.add_argument("--backend", choices=("serial", "processes", "ray"), default="processes",
                       help="where runs are computed: serial (this process), processes (a local pool, the default) "
                       "or ray (a Ray cluster; needs pip install 'curteach[ray]')")
    group.add_argument("--ray-address", default=None,
                       help="Ray cluster to join (default: $RAY_ADDRESS, else a local Ray instance sized by --workers)")
    group.add_argument("--gpus-per-run", type=float, default=0.0,
                       help="the GPU share of each run: on Ray its num_gpus; in the process pool with --device cuda "
                       "at most GPUs/share runs at once (default 0: none on Ray, one run per worker in the pool)")
    add_log_arguments(group)


def check_sweep_flags(args: argparse.Namespace):
    """The backend the flags ask for, built once and kept in ``args.sweep_backend``, and for a command with
    ``--device`` the runs' device in ``args.sweep_device`` (:func:`~curteach_teaching.sweeps.devices.sweep_device`);
    ``ValueError`` for a bad ``--workers`` (the backend's check), Ray flags given without ``--backend ray``
    (``--gpus-per-run`` also goes with the process pool and ``--device cuda``), ``--device cuda`` without a GPU, or
    a Ray address that does not answer. ``--runs`` and ``--seed`` are the session's (:func:`sweep_session`). Writes
    nothing."""
    from curteach_teaching.sweeps.sweep import make_backend

    if getattr(args, "sweep_backend", None) is not None:
        return args.sweep_backend
    check_log_flags(args)
    if args.report_only and args.overwrite:
        raise ValueError("--report-only computes nothing and cannot --overwrite")
    device = getattr(args, "device", None)
    if args.backend != "ray" and args.ray_address is not None:
        raise ValueError("--ray-address and --gpus-per-run need --backend ray")
    if args.backend != "ray" and args.gpus_per_run and (device in (None, "cpu") or args.backend != "processes"):
        raise ValueError("--ray-address and --gpus-per-run need --backend ray (--gpus-per-run also goes with the "
                         "process pool and --device cuda)")
    workers = args.workers
    if device is not None:
        from curteach_teaching.sweeps.devices import gpu_count, gpu_workers, sweep_device

        try:
            args.sweep_device = sweep_device(device, on_ray=args.backend == "ray", gpus_per_run=args.gpus_per_run)
        except ValueError as error:
            if not args.report_only:
                raise
            raise ValueError(f"{error}; a report trains nothing: where the device is not one of the sweep's settings "
                             "(dataset-bc), add --device cpu (after DIR with curteach report)") from None
        if args.backend == "processes" and args.sweep_device == "cuda" and args.gpus_per_run:
            from curteach_teaching.sweeps.backends import capped_workers

            with named_as_options(args):  # --gpus-per-run, not gpus_per_run
                workers = gpu_workers(capped_workers(workers), args.gpus_per_run, gpu_count())
    with named_as_options(args):  # --workers, not the backend's workers
        backend = make_backend(args.backend, workers, args.ray_address,
                               args.gpus_per_run if args.backend == "ray" else 0.0)
    if args.backend == "ray" and not args.report_only:
        import os

        from curteach_teaching.sweeps.ray_backend import check_ray_address

        address = args.ray_address or os.environ.get("RAY_ADDRESS")
        if address:
            check_ray_address(address)
    args.sweep_backend = backend
    return backend


def sweep_session(args: argparse.Namespace, out: Path):
    """The command's :class:`~curteach_teaching.sweeps.sweep.SweepSession` for ``out`` (which checks ``--runs`` and
    ``--seed``), on the backend of :func:`check_sweep_flags`, built once. Not yet entered: ``with session:`` claims
    the folder (nothing for ``--report-only``, which only reads)."""
    from curteach_teaching.sweeps.sweep import SweepSession

    backend = check_sweep_flags(args)
    with named_as_options(args):  # --runs, not the session's runs
        return SweepSession(out, args.runs, seed=args.seed, backend=backend, progress=progress_wanted(args),
                            compute=not args.report_only, overwrite=args.overwrite,
                            command=getattr(args, "command_line", None))


def run_sweep_command(args: argparse.Namespace, experiment, report, out: Path, session=None) -> int:
    """Run (or resume) the sweep of ``experiment`` with the shared flags, then write ``report`` into ``out``.

    Args:
        args: the parsed flags (see :func:`add_sweep_arguments`).
        experiment: the experiment (cells x runs, see :mod:`curteach_teaching.sweeps.sweep`).
        report: its :class:`~curteach_teaching.sweeps.reports.Report`.
        out: the output folder.
        session: the command's :func:`sweep_session` for ``out``, if it made one already (and may have entered
            it); default: a new one, entered here.

    Returns:
        The exit code (0).
    """
    from contextlib import nullcontext

    from curteach_envs._util import counted

    if session is None:
        session = sweep_session(args, out)
    logger = run_logger(args, experiment, out, report)  # None without --log-dir
    session.on_saved = None if logger is None else logger.log_run
    # the lock covers the report too: two commands never write one folder's outputs at once
    with nullcontext() if session.claimed else session:
        sweep = session.run(experiment)
        others = sorted({path.parent.name for path in (out / "runs").glob("*/run_*.json")} - set(experiment.cells))
        if others:  # e.g. cells added by a later command: a report of the last command's cells alone says so
            print(f"note: {out} also holds runs of {', '.join(others)}, which this command does not name: they are "
                  "kept, and left out of this report (a command naming them reports them)")
        if args.report_only:
            found = sum(len(runs) for runs in sweep.cells.values())
            print(f"report of the {found} of {counted(len(experiment.cells) * args.runs, 'run')} saved so far")
            if logger is not None:  # a run is logged when it is computed; --report-only logs every saved run
                print(f"{counted(logger.log_all(sweep.all_results), 'run')} logged into {logger.log_dir}")
        elif logger is not None:
            print(f"{counted(len(sweep.computed), 'run')} logged into {logger.log_dir} (runs reused from disk are not "
                  "logged again; --report-only logs them all)")
        report.write(sweep, out, figures=not args.no_figures, command=getattr(args, "command_line", None))
    return 0
