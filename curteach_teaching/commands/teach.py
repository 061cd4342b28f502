"""``curteach teach``: the teacher-centric experiment on any tabular environment (Gymnasium toy-text, seals)."""

from __future__ import annotations

import argparse
import json

from curteach_teaching.commands.sweep_options import (
    add_sweep_arguments,
    check_sweep_flags,
    named_as_options,
    output_folder,
    run_sweep_command,
    teacher_names,
)

BUILTIN_TEACHERS = ("Agn", "Omn", "Cur", "Cur-T", "Cur-L", "BBox")


def add_parser(subparsers) -> None:
    """Register ``curteach teach``."""
    parser = subparsers.add_parser(
        "teach", help="teachers teach a learner on any tabular environment (FrozenLake, CliffWalking, Taxi, seals)",
        description="Teacher-centric teaching on the exact export of an environment with a transition table "
        "(Gymnasium's toy-text FrozenLake, CliffWalking, Taxi) or a seals tabular model: the expert's "
        "demonstrations from every reachable state, one learner per teacher, the exact expected return of each "
        "learner's policy after every step. Teachers and learners may be plug-ins (module:attr or an entry point "
        "of curteach.teachers / curteach.learners). Writes DIR/runs/, DIR/summary.csv, DIR/report.json and a "
        "figure.",
    )
    parser.add_argument("--env", required=True, help="a registered environment id, e.g. FrozenLake-v1")
    parser.add_argument("--env-kwargs", default="{}", help='JSON keyword arguments of gym.make, e.g. \'{"map_name": '
                        '"8x8"}\' (default {})')
    parser.add_argument("--learner", default="maxent-irl",
                        help="maxent-irl (linear MaxEnt-IRL, default), bc (a softmax table) or module:attr")
    parser.add_argument("--teachers", default="Agn,Omn,Cur",
                        help=f"comma-separated: built-ins {','.join(BUILTIN_TEACHERS)}, or module:attr / entry points "
                        "(default Agn,Omn,Cur)")
    parser.add_argument("--steps", type=int, default=100, help="teaching steps per run (default 100)")
    parser.add_argument("--learning-rate", type=float, default=0.1, help="the learner's step size (default 0.1)")
    parser.add_argument("--gamma", type=float, default=0.95, help="discount (default 0.95)")
    parser.add_argument("--demos-per-start", type=int, default=10,
                        help="expert demonstrations per start state in the pool (default 10)")
    parser.add_argument("--demo-length", type=int, default=20, help="actions per demonstration (default 20)")
    add_sweep_arguments(parser, default_runs=10, default_out="results/teach-ENV")
    parser.set_defaults(func=run_teach)


def _env_kwargs(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--env-kwargs must be a JSON object; got {text!r} ({error.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--env-kwargs must be a JSON object; got {text!r}")
    return value


def run_teach(args: argparse.Namespace) -> int:
    """Run (or resume) the sweep and write its report."""
    from curteach_teaching.experiments.tabular.experiment import EnvTeachingExperiment
    from curteach_teaching.experiments.tabular.report import TeachReport

    check_sweep_flags(args)
    kwargs = _env_kwargs(args.env_kwargs)
    with named_as_options(args, {"n_per_start": "demos_per_start", "length": "demo_length"}):
        experiment = EnvTeachingExperiment(
            env_id=args.env, env_kwargs=kwargs, learner=args.learner, teachers=teacher_names(args),
            steps=args.steps, gamma=args.gamma, learning_rate=args.learning_rate,
            n_per_start=args.demos_per_start, length=args.demo_length,
        )
    experiment.check_environment()  # an unusable environment fails before the folder is touched
    out = output_folder(args, f"results/teach-{args.env.replace('/', '-')}")
    report = TeachReport(experiment, curves=experiment.teacher_names,
                    title=f"{args.env}, {experiment.learner} learner: expected return")
    return run_sweep_command(args, experiment, report, out)
