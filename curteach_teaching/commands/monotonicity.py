"""``curteach car-monotonicity``: Theorems 1 and 3 measured, the one-step decrease of every candidate."""

from __future__ import annotations

import argparse

from curteach_teaching.commands.sweep_options import (
    add_realizable_arguments,
    add_sweep_arguments,
    check_sweep_flags,
    named_as_options,
    output_folder,
    run_sweep_command,
)

DEFAULT_CHECKPOINTS = "0,10,30,100,300"
DEFAULT_RATES = "0.005,0.05,0.5"


def add_parser(subparsers) -> None:
    """Register ``curteach car-monotonicity``."""
    parser = subparsers.add_parser(
        "car-monotonicity",
        help="Theorems 1 and 3: the one-step decrease of ||theta* - theta||^2 for every candidate demonstration "
        "against its Psi^E and Psi^L, realizable linear MaxEnt-IRL and CrossEnt-BC learners",
        description="Each run draws theta* and builds realizable linear learners (MaxEnt-IRL: the teacher is the "
        "soft-optimal policy of the reward phi . theta*; CrossEnt-BC: the teacher is softmax(theta* . psi)), teaches "
        "each from its own theta_1 with random starts (Agn), and at every checkpoint computes for every "
        "demonstration of the pool and every start the exact decrease of the squared distance to theta* that one "
        "update on it would give, at each rate. Writes DIR/summary.csv, DIR/report.json (rank correlations, fitted "
        "slopes, Cur's percentile, inside and outside the step-size condition) and three figures.",
    )
    parser.add_argument("--learners", default="irl,bc", help="comma-separated subset of irl,bc (default both)")
    parser.add_argument("--checkpoints", default=DEFAULT_CHECKPOINTS,
                        help=f"comma-separated teaching steps at which every candidate is scored (default "
                        f"{DEFAULT_CHECKPOINTS})")
    parser.add_argument("--teaching-rate", type=float, default=0.05,
                        help="Agn's rate along the learner's path (default 0.05)")
    parser.add_argument("--rates", default=DEFAULT_RATES,
                        help=f"comma-separated rates eta at which each one-step decrease is evaluated (default "
                        f"{DEFAULT_RATES})")
    parser.add_argument("--inside-ratio", type=float, default=0.1,
                        help="a candidate with eta ||g||^2 / (2 |<theta* - theta, g>|) at or below this is inside the "
                        "step-size condition (default 0.1)")
    add_realizable_arguments(parser, drawn="theta* and theta_1 are", gamma_note=" of the MaxEnt-IRL learner")
    add_sweep_arguments(parser, default_runs=10, default_out="results/car-monotonicity-MDP")
    parser.set_defaults(func=run_monotonicity)


def _numbers(text: str, flag: str, kind):
    try:
        return tuple(kind(item) for item in text.split(",") if item.strip())
    except ValueError:
        raise ValueError(f"{flag} must be comma-separated numbers; got {text!r}") from None


def run_monotonicity(args: argparse.Namespace) -> int:
    """Run (or resume) the monotonicity sweep and write its report."""
    from curteach_teaching.experiments.theory.monotonicity_experiment import MonotonicityExperiment
    from curteach_teaching.experiments.theory.monotonicity_report import MonotonicityReport

    check_sweep_flags(args)
    with named_as_options(args):
        experiment = MonotonicityExperiment(
            learners=tuple(item.strip() for item in args.learners.split(",") if item.strip()),
            checkpoints=_numbers(args.checkpoints, "--checkpoints", int),
            teaching_rate=args.teaching_rate, rates=_numbers(args.rates, "--rates", float),
            theta_scale=args.theta_scale, gamma=args.gamma, mdp_kind=args.mdp, inside_ratio=args.inside_ratio)
    out = output_folder(args, f"results/car-monotonicity-{args.mdp}")
    report = MonotonicityReport(experiment, title=f"realizable linear learners ({args.mdp}), Agn at eta = "
                                f"{args.teaching_rate:g}")
    return run_sweep_command(args, experiment, report, out)
