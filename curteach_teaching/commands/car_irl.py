"""``curteach car-irl`` (the paper's Fig. 3) and ``curteach car-irl-observability`` (Fig. 5)."""

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
from curteach_teaching.teaching.teachers import TEACHER_NAMES

DEFAULT_OBSERVABILITY = "1:inf,40:inf,1:100,10:100,1:10"


def _common(parser: argparse.ArgumentParser, default_out: str, teachers=None) -> None:
    add_car_arguments(parser, init="T0-T3", steps=200, teachers=teachers, init_help="(also none, T0-T1, ...) ")
    parser.add_argument("--teaching-rate", type=float, default=0.17,
                        help="constant teaching learning rate (default 0.17)")
    parser.add_argument(
        "--projection-radius", type=float, default=None,
        help="project theta onto this ball after each step (the paper's Proj; default: none, as in the original)",
    )
    parser.add_argument("--reward-model", choices=("quadratic", "linear"), default="quadratic", help="learner reward")
    parser.add_argument("--cur-aggregation", choices=("mean", "geometric"), default="mean",
                        help="Cur's aggregation over the pool (default mean, as the IRL original)")
    add_sweep_arguments(parser, default_runs=10, default_out=f"{default_out}-INIT")


def add_parser(subparsers) -> None:
    """Register ``curteach car-irl`` and ``curteach car-irl-observability``."""
    fig2 = subparsers.add_parser(
        "car-irl", help="teach the MaxEnt-IRL learner on the car with seven teachers (paper Fig. 3)",
        description="Seven teachers (Agn, Omn, Scot, Cur, Cur-T, Cur-L, BBox) teach MaxEnt-IRL learners on fresh "
        "random roads. Writes DIR/runs/ (one file per run, resumable), DIR/summary.csv, DIR/report.json and figures.",
    )
    _common(fig2, "results/car-irl", teachers=TEACHER_NAMES)
    fig2.add_argument("--heatmap-teacher", default=None,
                      help="teacher whose curriculum heat map is drawn (default Cur, else the first teacher)")
    fig2.add_argument("--scot-variant", choices=("original", "bec"), default="original",
                      help="Scot's batch: original (the authors' stand-in, a cover of the starts by equal feature "
                      "expectations; default) or bec (the published SCOT: a set cover of the behavioural "
                      "equivalence class)")
    fig2.add_argument("--scot-features", choices=("learner", "linear", "quadratic"), default="learner",
                      help="the reward class of --scot-variant bec: the learner's (--reward-model, default), "
                      "linear or quadratic")
    fig2.set_defaults(func=run_car_irl)

    fig4 = subparsers.add_parser(
        "car-irl-observability", help="Cur under limited observability (B, k) (paper Fig. 5)",
        description="Cur teachers that re-estimate the learner's policy every B steps from k probes per state "
        "(k=inf: exact). Same outputs as car-irl.",
    )
    _common(fig4, "results/car-irl-observability")
    fig4.add_argument("--settings", default=DEFAULT_OBSERVABILITY,
                      help=f"comma-separated B:k pairs, k may be inf (default {DEFAULT_OBSERVABILITY})")
    fig4.add_argument("--smoothing", type=float, default=0.5, help="additive smoothing of probe counts (default 0.5)")
    fig4.add_argument("--heatmap-teacher", default=None,
                      help="teacher whose curriculum heat map is drawn (default: first)")
    fig4.set_defaults(func=run_observability)


def _experiment_kwargs(args) -> dict:
    return dict(
        init_types=car_init(args),
        steps=args.steps,
        teaching_rate=args.teaching_rate,
        projection_radius=args.projection_radius,
        reward_model=args.reward_model,
        cur_aggregation=args.cur_aggregation,
    )


def _sweep(args, experiment, default_out: str, heatmap_teacher, title: str) -> int:
    from curteach_teaching.experiments.car.report import CarReport

    check_sweep_flags(args)
    if heatmap_teacher is not None and heatmap_teacher not in experiment.teacher_names:  # names as in the summary
        raise ValueError(f"--heatmap-teacher must be one of {list(experiment.teacher_names)}; got {heatmap_teacher!r}")
    out = output_folder(args, f"{default_out}-{args.init}")
    return run_sweep_command(args, experiment, CarReport(experiment, heatmap_teacher=heatmap_teacher, title=title), out)


def run_car_irl(args: argparse.Namespace) -> int:
    """Run (or resume) the seven-teacher car-irl sweep and write its report."""
    from curteach_teaching.experiments.car.irl import CarIRLExperiment

    with named_as_options(args):
        experiment = CarIRLExperiment(
            teachers=teacher_names(args),
            scot_variant=args.scot_variant,
            scot_feature_map=None if args.scot_features == "learner" else args.scot_features,
            **_experiment_kwargs(args),
        )
    heatmap = args.heatmap_teacher
    if heatmap is None:  # default: Cur, or the first teacher when Cur is not taught
        heatmap = "Cur" if "Cur" in experiment.teachers else experiment.teacher_names[0]
    title = f"MaxEnt-IRL, init {args.init}"
    if experiment.scot_variant != "original":
        title += f", Scot: {experiment.scot_variant} ({experiment.scot_features})"
    default_out = "results/car-irl" if experiment.scot_variant == "original" else "results/car-irl-scot-bec"
    return _sweep(args, experiment, default_out, heatmap, title)


def run_observability(args: argparse.Namespace) -> int:
    """Run (or resume) the limited-observability sweep and write its report."""
    from curteach_teaching.experiments.car.irl import CarIRLExperiment
    from curteach_teaching.teaching.observability import parse_observability

    settings = tuple(parse_observability(item) for item in args.settings.split(",") if item.strip())
    import math

    if not (math.isfinite(args.smoothing) and args.smoothing >= 0):  # the runs would refuse it, after sweep.json
        raise ValueError(f"--smoothing must be a finite number >= 0; got {args.smoothing}")
    with named_as_options(args):
        experiment = CarIRLExperiment(observability=settings, smoothing=args.smoothing, **_experiment_kwargs(args))
    return _sweep(args, experiment, "results/car-irl-observability", args.heatmap_teacher,
                  f"Cur under limited observability, init {args.init}")
