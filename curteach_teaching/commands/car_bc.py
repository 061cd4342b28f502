"""``curteach car-bc``: teach CrossEnt-BC learners on the car with Agn, Cur, Cur-T and Cur-L (the paper's Fig. 4)."""

from __future__ import annotations

import argparse

from curteach_teaching.commands.sweep_options import (
    add_car_arguments,
    add_sweep_arguments,
    car_init,
    check_sweep_flags,
    named_as_options,
    output_folder,
    run_sweep_command,
    teacher_names,
)

# the import-free names module: the experiment module imports torch and imitation, and the parser must not (the CLI
# starts for every command)
from curteach_teaching.names import BC_TEACHER_NAMES
from curteach_teaching.names import BC_UPDATES as UPDATES


def add_parser(subparsers) -> None:
    """Register ``curteach car-bc``."""
    parser = subparsers.add_parser(
        "car-bc", help="teach CrossEnt-BC learners on the car with four teachers (paper Fig. 4)",
        description="Agn, Cur, Cur-T and Cur-L teach CrossEnt-BC learners (imitation's BC with a quadratic softmax "
        "policy) on fresh random roads. Writes DIR/runs/ (one file per run, resumable), DIR/summary.csv, "
        "DIR/report.json and figures.",
    )
    add_car_arguments(parser, init="T0", steps=400, teachers=BC_TEACHER_NAMES, init_help="(T0 as the BC original) ")
    parser.add_argument("--update", choices=UPDATES, default="batch",
                        help="batch: imitation's BC, one SGD step on the summed log-likelihood of the 100 pairs "
                        "(default, the paper's learner); sequential: the original's 100 per-pair SGD steps")
    parser.add_argument("--learning-rate", type=float, default=0.01, help="SGD step size (default 0.01)")
    parser.add_argument("--pretrain-sweeps", type=int, default=1000, help="pre-training sweeps (default 1000)")
    parser.add_argument("--heatmap-teacher", default="Cur",
                        help="teacher whose curriculum heat map is drawn (default Cur)")
    add_sweep_arguments(parser, default_runs=10, default_out="results/car-bc-INIT-UPDATE", device=True)
    parser.set_defaults(func=run_car_bc)


def run_car_bc(args: argparse.Namespace) -> int:
    """Run (or resume) the car-bc sweep and write its report."""
    init_types = car_init(args)
    check_sweep_flags(args)
    out = output_folder(args, f"results/car-bc-{args.init}-{args.update}")
    # every argument is checked (the experiment built) before the folder is claimed
    from curteach_teaching.experiments.car.bc import CarBCExperiment
    from curteach_teaching.experiments.car.report import CarReport

    teachers = teacher_names(args)
    with named_as_options(args):
        experiment = CarBCExperiment(
            init_types=init_types,
            steps=args.steps,
            teachers=teachers,
            update=args.update,
            learning_rate=args.learning_rate,
            pretrain_sweeps=args.pretrain_sweeps,
            device=args.sweep_device,  # resolved by check_sweep_flags ("auto" -> cuda or cpu)
        )
    heatmap = args.heatmap_teacher
    names = experiment.teacher_names  # as in the summary: a plug-in by its name attribute
    if heatmap not in names:
        if args.heatmap_teacher != "Cur":
            raise ValueError(f"--heatmap-teacher must be one of {list(names)}; got {heatmap!r}")
        heatmap = names[0]
    # the BC original had no assertion that could crash: no "finished" subset, nothing about crashes
    report = CarReport(experiment, heatmap_teacher=heatmap, title=f"CrossEnt-BC ({args.update}), init {args.init}",
                       crash_flag=False)
    return run_sweep_command(args, experiment, report, out)
