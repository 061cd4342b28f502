"""``curteach car-irl-sensitivity`` and ``curteach car-bc-sensitivity``: the car experiments over several rates."""

from __future__ import annotations

import argparse

from curteach_teaching.commands.sweep_options import (
    add_car_arguments,
    add_realizable_arguments,
    add_sweep_arguments,
    car_init,
    check_sweep_flags,
    named_as_options,
    output_folder,
    run_sweep_command,
    teacher_names,
)
from curteach_teaching.names import BC_TEACHER_NAMES, TEACHER_NAMES
from curteach_teaching.names import BC_UPDATES as UPDATES

DEFAULT_TEACHING_RATES = "0.03,0.05,0.1,0.17,0.25"
DEFAULT_LEARNING_RATES = "0.003,0.01,0.03,0.1"


def add_parser(subparsers) -> None:
    """Register ``curteach car-irl-sensitivity`` and ``curteach car-bc-sensitivity``."""
    irl = subparsers.add_parser(
        "car-irl-sensitivity",
        help="the MaxEnt-IRL car experiment at several teaching rates (and projection radii), paired",
        description="One cell per teaching rate (and projection radius); every cell teaches on the same roads. Writes "
        "DIR/runs/<cell>/, DIR/summary.csv (cell, teacher, subset, t, mean, sem, n), DIR/report.json, learning curves "
        "per cell, DIR/final_reward_vs_rate.png and DIR/stability_vs_rate.png.",
    )
    add_car_arguments(irl, init="T0-T3", steps=200, teachers=TEACHER_NAMES)
    irl.add_argument("--teaching-rates", default=DEFAULT_TEACHING_RATES,
                     help=f"comma-separated teaching rates, one cell each (default {DEFAULT_TEACHING_RATES})")
    irl.add_argument("--projection-radii", default=None,
                     help="comma-separated projection radii, a second axis of cells ('none': no projection; "
                     "default: no projection, one axis)")
    irl.add_argument("--reward-model", choices=("quadratic", "linear"), default="quadratic", help="learner reward")
    add_sweep_arguments(irl, default_runs=20, default_out="results/car-irl-sensitivity-INIT")
    irl.set_defaults(func=run_car_irl_sensitivity)

    theorem = subparsers.add_parser(
        "car-irl-theorem2",
        help="Theorem 2 with a realizable linear MaxEnt-IRL learner (car or a deterministic MDP): distance to theta*",
        description="Each run draws theta*, makes the car's reward phi . theta* (the teacher is soft-optimal for "
        "it), and lets each teacher teach a linear learner from theta = 0 with exact occupancies at a small "
        "constant rate. The curves are ||theta* - theta_t||; report.json gives the fitted factor per step.",
    )
    add_car_arguments(theorem, init=None, steps=300)
    theorem.add_argument("--teaching-rate", type=float, default=0.05, help="constant teaching rate (default 0.05)")
    add_realizable_arguments(theorem, drawn="theta* is",
                             gamma_note="; with 1, Lemma 1's identity is checked along Cur's run")
    add_sweep_arguments(theorem, default_runs=10, default_out="results/car-irl-theorem2-MDP")
    theorem.set_defaults(func=run_theorem2)

    bc = subparsers.add_parser(
        "car-bc-sensitivity",
        help="the CrossEnt-BC car experiment at several learning rates, paired",
        description="One cell per learning rate; every cell teaches on the same roads. Same outputs as "
        "car-irl-sensitivity (without the crash share: the BC original could not crash).",
    )
    add_car_arguments(bc, init="T0", steps=400, teachers=BC_TEACHER_NAMES)
    bc.add_argument("--learning-rates", default=DEFAULT_LEARNING_RATES,
                    help=f"comma-separated SGD step sizes, one cell each (default {DEFAULT_LEARNING_RATES})")
    bc.add_argument("--update", choices=UPDATES, default="batch", help="batch (default) or sequential, as car-bc")
    bc.add_argument("--pretrain-sweeps", type=int, default=1000, help="pre-training sweeps (default 1000)")
    add_sweep_arguments(bc, default_runs=20, default_out="results/car-bc-sensitivity-INIT-UPDATE", device=True)
    bc.set_defaults(func=run_car_bc_sensitivity)


def run_car_irl_sensitivity(args: argparse.Namespace) -> int:
    """Run (or resume) the MaxEnt-IRL sensitivity sweep and write its report."""
    from curteach_teaching.experiments.car.irl import CarIRLExperiment
    from curteach_teaching.experiments.theory.sensitivity import SensitivityExperiment, SensitivityReport, parse_values

    check_sweep_flags(args)
    rates = parse_values(args.teaching_rates, "--teaching-rates")
    radii = None if args.projection_radii is None else parse_values(args.projection_radii, "--projection-radii",
                                                                       allow_none=True)
    with named_as_options(args):
        base = CarIRLExperiment(init_types=car_init(args), steps=args.steps, teachers=teacher_names(args),
                                reward_model=args.reward_model)
    experiment = SensitivityExperiment(base, rates, radii)
    out = output_folder(args, f"results/car-irl-sensitivity-{args.init}")
    report = SensitivityReport(experiment, title=f"MaxEnt-IRL, init {args.init}")
    return run_sweep_command(args, experiment, report, out)


def run_car_bc_sensitivity(args: argparse.Namespace) -> int:
    """Run (or resume) the CrossEnt-BC sensitivity sweep and write its report."""
    check_sweep_flags(args)
    init_types = car_init(args)
    out = output_folder(args, f"results/car-bc-sensitivity-{args.init}-{args.update}")
    from curteach_teaching.experiments.car.bc import CarBCExperiment
    from curteach_teaching.experiments.theory.sensitivity import SensitivityExperiment, SensitivityReport, parse_values

    rates = parse_values(args.learning_rates, "--learning-rates")
    with named_as_options(args):
        base = CarBCExperiment(init_types=init_types, steps=args.steps, teachers=teacher_names(args),
                               update=args.update, pretrain_sweeps=args.pretrain_sweeps, device=args.sweep_device)
    experiment = SensitivityExperiment(base, rates)
    report = SensitivityReport(experiment, title=f"CrossEnt-BC ({args.update}), init {args.init}")
    return run_sweep_command(args, experiment, report, out)


def run_theorem2(args: argparse.Namespace) -> int:
    """Run (or resume) the realizable Theorem-2 sweep and write its report."""
    from curteach_teaching.experiments.theory.theorem2 import RealizableExperiment, Theorem2Report

    check_sweep_flags(args)
    with named_as_options(args):
        experiment = RealizableExperiment(steps=args.steps, teaching_rate=args.teaching_rate,
                                          theta_scale=args.theta_scale, gamma=args.gamma, mdp_kind=args.mdp)
    out = output_folder(args, f"results/car-irl-theorem2-{args.mdp}")
    report = Theorem2Report(experiment, title=f"realizable linear MaxEnt-IRL, eta = {args.teaching_rate:g}")
    return run_sweep_command(args, experiment, report, out)

