"""``curteach car-bc``: teach CrossEnt-BC learners on the car with Agn, Cur, Cur-T and Cur-L (the paper's Fig. 3)."""

from __future__ import annotations

import argparse
from pathlib import Path

# The experiment module imports torch and imitation; the parser must not (the CLI starts for every command).
# tests/test_car_bc.py checks these equal curteach_teaching.experiments.car_bc's constants.
BC_TEACHER_NAMES = ("Agn", "Cur", "Cur-T", "Cur-L")
UPDATES = ("batch", "sequential")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "car-bc", help="teach CrossEnt-BC learners on the car with four teachers (paper Fig. 3)",
        description="Agn, Cur, Cur-T and Cur-L teach CrossEnt-BC learners (imitation's BC with a quadratic softmax "
        "policy) on fresh random roads. Writes DIR/runs/ (one file per run, resumable), DIR/summary.csv, "
        "DIR/report.json and figures.",
    )
    parser.add_argument("--init", default="T0", help="pre-training tasks: T0 (default, as the BC original) or T0-T3")
    parser.add_argument("--runs", type=int, default=10, help="number of runs (default 10)")
    parser.add_argument("--steps", type=int, default=400, help="teaching steps per run (default 400)")
    parser.add_argument("--seed", type=int, default=0, help="sweep seed; run i uses SeedSequence([seed, i]) (default 0)")
    parser.add_argument("--update", choices=UPDATES, default="batch",
                        help="batch: imitation's BC, one SGD step on the summed log-likelihood of the 100 pairs "
                        "(default, the paper's learner); sequential: the original's 100 per-pair SGD steps")
    parser.add_argument("--learning-rate", type=float, default=0.01, help="SGD step size (default 0.01)")
    parser.add_argument("--pretrain-sweeps", type=int, default=1000, help="pre-training sweeps (default 1000)")
    parser.add_argument("--teachers", default=",".join(BC_TEACHER_NAMES),
                        help=f"comma-separated subset of {','.join(BC_TEACHER_NAMES)} (default all)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default results/car-bc-INIT-UPDATE)")
    parser.add_argument("--workers", type=int, default=None, help="parallel processes (default: CPU count)")
    parser.add_argument("--heatmap-teacher", default="Cur", help="teacher whose curriculum heat map is drawn (default Cur)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--no-figures", action="store_true", help="skip the figures")
    parser.set_defaults(func=run_car_bc)


def run_car_bc(args: argparse.Namespace) -> int:
    from curteach_teaching.experiments.car_bc import CarBCExperiment
    from curteach_teaching.experiments.car_irl import INIT_CHOICES, parse_init
    from curteach_teaching.experiments.runner import check_sweep_arguments, run_sweep, write_outputs

    if args.init not in INIT_CHOICES:
        raise ValueError(f"--init must be one of {list(INIT_CHOICES)}; got {args.init!r}")
    check_sweep_arguments(args.runs, args.seed, args.workers)
    teachers = tuple(t.strip() for t in args.teachers.split(",") if t.strip())
    experiment = CarBCExperiment(
        init_types=parse_init(args.init),
        steps=args.steps,
        teachers=teachers,
        update=args.update,
        learning_rate=args.learning_rate,
        pretrain_sweeps=args.pretrain_sweeps,
    )
    heatmap = args.heatmap_teacher
    if heatmap not in experiment.teachers:
        if args.heatmap_teacher != "Cur":
            raise ValueError(f"--heatmap-teacher must be one of {list(experiment.teachers)}; got {heatmap!r}")
        heatmap = experiment.teachers[0]
    out = args.out if args.out is not None else Path(f"results/car-bc-{args.init}-{args.update}")
    sweep = run_sweep(experiment, out, args.runs, seed=args.seed, workers=args.workers, progress=not args.no_progress)
    write_outputs(experiment, sweep, out, heatmap_teacher=heatmap, figures=not args.no_figures,
                  title=f"CrossEnt-BC ({args.update}), init {args.init}")
    return 0
