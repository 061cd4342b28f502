"""``curteach car-trainers``: curricula over demonstrations for imitation's BC, DAgger, GAIL, AIRL and MCE-IRL on the
car."""

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
)

# import-free: the parser must not import torch or imitation (the CLI starts for every command)
from curteach_teaching.names import AGN, BC_TEACHER_NAMES, CUR, CUR_L, CUR_T

#: The built-in car trainers, the default of --trainers (the experiment looks every name up in CAR_TRAINERS).
TRAINER_NAMES = ("bc", "dagger", "gail", "airl", "mce-irl")
#: ``--scale`` -> settings of :class:`~curteach_teaching.experiments.car.trainers.CarTrainersExperiment`.
SCALES = {
    "default": {"steps": 10},
    "small": {"steps": 3, "adversarial_timesteps": 100, "mce_iterations": 3, "pretrain_iterations": 5},
}


def add_parser(subparsers) -> None:
    """Register ``curteach car-trainers``."""
    parser = subparsers.add_parser(
        "car-trainers", help="curricula for imitation's BC, DAgger, GAIL, AIRL and MCE-IRL on the car",
        description="Each trainer (imitation's BC, DAgger, GAIL, AIRL, MCE-IRL) learns the car from the same "
        "demonstrations with each curriculum (Agn, Cur, Cur-T, Cur-L) through its curriculum adapter; the exact "
        "expected reward of its policy is recorded after every curriculum epoch (BC epoch, DAgger round, "
        "adversarial round, MCE-IRL teaching step). Writes DIR/runs/<trainer>_<curriculum>/ (one file per run, "
        "resumable), DIR/summary.csv (trainer, curriculum, step, mean, sem, n), DIR/report.json and one figure per "
        "trainer.",
    )
    parser.add_argument("--trainers", default=",".join(TRAINER_NAMES),
                        help=f"comma-separated trainers, in figure order: built-ins or plug-in recipes (module:attr, "
                        f"curteach.car_trainers entry points) (default {','.join(TRAINER_NAMES)})")
    parser.add_argument("--curricula", default=",".join(BC_TEACHER_NAMES),
                        help=f"comma-separated subset of {AGN},{CUR},{CUR_T},{CUR_L}, or plug-in curricula "
                        "(module:attr, curteach.curricula entry points) (default all)")
    parser.add_argument("--scale", choices=tuple(SCALES), default="default",
                        help="default: 10 curriculum epochs (about 15 min for 10 runs on 2 free cores); small: 3 "
                        "epochs and shorter rounds (about 3 min; tests and CI)")
    parser.add_argument("--adversarial-timesteps", type=int, default=None,
                        help="GAIL and AIRL: generator (PPO) time steps per round (default 200; small: 100)")
    parser.add_argument("--disc-updates", type=int, default=None,
                        help="GAIL and AIRL: discriminator updates per round (default 2)")
    parser.add_argument("--match-starts", action="store_true", default=None,
                        help="GAIL and AIRL: the generator's episodes start where the epoch's demonstrations start "
                        "(as MCE-IRL's adapter does; default: from the car's own start distribution)")
    add_car_arguments(parser, init="T0", steps=10, init_help="(as car-bc) ")
    parser.set_defaults(steps=None)  # the scale's, unless given
    add_sweep_arguments(parser, default_runs=10, default_out="results/car-trainers-INIT-SCALE", device=True)
    parser.set_defaults(func=run_car_trainers)


def run_car_trainers(args: argparse.Namespace) -> int:
    """Run (or resume) the car-trainers sweep and write its report."""
    init_types = car_init(args)
    check_sweep_flags(args)
    out = output_folder(args, f"results/car-trainers-{args.init}-{args.scale}")
    import imitation  # noqa: F401  (the built-in trainers are imitation's: without it, one line before any run)

    from curteach_teaching.experiments.car.trainers import CarTrainersExperiment
    from curteach_teaching.experiments.car.trainers_report import CarTrainersReport

    settings = dict(SCALES[args.scale])
    for name in ("steps", "adversarial_timesteps", "disc_updates", "match_starts"):  # given flags override the scale's
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    with named_as_options(args):
        experiment = CarTrainersExperiment(trainers=args.trainers, curricula=args.curricula,
                                           init_types=init_types, device=args.sweep_device, **settings)
    report = CarTrainersReport(experiment, title=f"car trainers, init {args.init}")
    return run_sweep_command(args, experiment, report, out)
