"""``curteach nav`` (the paper's Figs. 6 and 7) and ``curteach nav-show`` (a trained policy's rollout)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from curteach_teaching.commands.sweep_options import (
    add_sweep_arguments,
    check_sweep_flags,
    output_folder,
    progress_wanted,
    run_sweep_command,
    sweep_session,
)
from curteach_teaching.names import PAPER_CURRICULA

CURRICULA = PAPER_CURRICULA
TASKS = ("shortest-path", "tsp")
#: ``--scale`` -> (dataset split sizes, default epochs, default --eval-every)
SCALES = {"paper": ("paper", 40, 100), "small": ("small", 3, 10), "demo": ("demo", 8, 50)}
#: ``--scale demo`` (shortest path; its dataset's sizes: ``experiments.nav.data.DEMO_SPLIT_SIZES``): its training
#: settings, which are not the paper's protocol (docs/experiments/nav.md#a-demo-that-learns): with the original's
#: plain SGD at 0.01 the network stays thousands of batches on the plateau of the action frequencies; Adam at 3e-3 on
#: the per-pair mean loss leaves it within a few hundred. A flag given on the command line wins.
DEMO_TRAINING = {"optimizer": "adam", "learning_rate": 3e-3, "loss": "mean", "max_batches": 600}


def add_parser(subparsers) -> None:
    """Register ``curteach nav`` and ``curteach nav-show``."""
    parser = subparsers.add_parser(
        "nav", help="learner-centric curricula for a CNN BC learner on shortest path / TSP (paper Figs. 6, 7)",
        description="Train the original's CNN by behaviour cloning (imitation's BC through CurriculumBC) with the "
        "curricula Agn, Cur, Cur-L and Cur-T on a navigation dataset; evaluate the best-on-validation model on the "
        "test split every --eval-every batches. Writes DIR/runs/<curriculum>/ (one file and one model per run, "
        "resumable; runs also checkpoint every epoch), DIR/summary.csv, DIR/report.json, DIR/test_reward.png and "
        "DIR/curriculum_features.png. The paper's figure shows only batches 1,000-11,000 (shortest path) and "
        "1,000-6,000 (TSP): --max-batches 11000 / 6000 reproduces it at about half the cost of 40 epochs.",
    )
    parser.add_argument("--task", choices=TASKS, default="shortest-path", help="the navigation task")
    parser.add_argument("--curricula", default=",".join(CURRICULA),
                        help=f"comma-separated subset of {','.join(CURRICULA)}, or plug-in curricula (module:attr, "
                        "curteach.curricula entry points) (default all)")
    parser.add_argument("--scale", choices=tuple(SCALES), default="paper",
                        help="paper: the original's dataset sizes and 40 epochs; small: a small dataset and 3 epochs "
                        "(about 70 s for the default 5 runs on 2 cores; tests and CI); demo (shortest path): 10 "
                        "demonstrations per configuration, 600 batches of Adam at 3e-3 on the mean loss, not the "
                        "paper's protocol, where the curves visibly leave the initial plateau (--runs 1 --curricula "
                        "Agn,Cur: about 2 minutes on 2 cores)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs of the pacing schedule (default 40; small: 3)")
    parser.add_argument("--max-batches", type=int, default=None,
                        help="stop each run after this many batches (11000 for shortest path / 6000 for TSP covers "
                        "the paper's plotted window)")
    parser.add_argument("--eval-every", type=int, default=None,
                        help="evaluate every this many batches (default 100; small: 10)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--dataset", type=Path, default=None, help="a dataset file of curteach make-dataset")
    source.add_argument("--dataset-seed", type=int, default=0,
                        help="seed of the dataset generated (and cached in DIR) when --dataset is not given (0)")
    parser.add_argument("--loss", choices=("original", "mean"), default=None,
                        help="original: per batch, the sum over steps of the mean cross-entropy over the active "
                        "demonstrations (default; demo: mean); mean: imitation's mean over state-action pairs")
    parser.add_argument("--lr-period", type=int, default=5000,
                        help="halve the learning rate every this many batches (default 5000, the original; the "
                        "paper says 500)")
    parser.add_argument("--teacher-difficulty", choices=("original", "paper"), default="original",
                        help="the task-specific teacher difficulty (default: the original code's)")
    add_sweep_arguments(parser, default_runs=5, default_out="results/nav-TASK-SCALE", device=True)
    parser.set_defaults(func=run_nav)

    show = subparsers.add_parser(
        "nav-show", help="draw a trained navigation policy's greedy rollout on one task",
        description="Load a model saved by curteach nav (DIR/runs/<curriculum>/run_XXXXX.model.pt) and draw its "
        "greedy rollout on one task of a dataset split: a strip of frames (.png) or an animation (.gif).",
    )
    show.add_argument("--model", type=Path, required=True, help="a run's model file (.model.pt)")
    show.add_argument("--task", choices=TASKS, required=True, help="the navigation task")
    show_source = show.add_mutually_exclusive_group()
    show_source.add_argument("--dataset", type=Path, default=None, help="a dataset file")
    show_source.add_argument("--dataset-seed", type=int, default=0, help="seed of a generated dataset (0)")
    show.add_argument("--scale", choices=tuple(SCALES), default="small",
                      help="size of the generated dataset when --dataset is not given (default small)")
    show.add_argument("--split", choices=("train", "val", "test"), default="test", help="the split (default test)")
    show.add_argument("--index", type=int, default=0, help="the datapoint of the split (default 0)")
    show.add_argument("--out", type=Path, default=Path("rollout.png"), help="output .png or .gif (rollout.png)")
    show.set_defaults(func=run_nav_show)


def _check_dataset_source(args) -> None:
    """``ValueError`` for a ``--dataset`` that is not a file or a negative ``--dataset-seed`` (nothing is read)."""
    from curteach_envs._util import check_int

    if args.dataset is not None:
        if not args.dataset.is_file():
            raise ValueError(f"--dataset {str(args.dataset)!r} is not a file")
    else:
        check_int("--dataset-seed", args.dataset_seed, 0)


def _checkpoint_dir(args: argparse.Namespace, out: Path) -> str | None:
    """Per-epoch checkpoints under ``out`` (absolute, so Ray workers find it), except on a Ray cluster given by
    address, whose nodes may not share this disk."""
    from curteach_teaching.experiments.nav.experiment import default_checkpoint_dir

    if args.backend == "ray" and (args.ray_address or os.environ.get("RAY_ADDRESS")):
        return None
    return default_checkpoint_dir(out.resolve())


def run_nav(args: argparse.Namespace) -> int:
    """Run (or resume) the navigation sweep and write its report."""
    from curteach_envs._util import check_int
    from curteach_teaching.experiments.nav.data import (
        NAV_TASKS,
        cached_dataset,
        check_split_sizes,
        file_digest,
        hand_over,
    )
    from curteach_teaching.experiments.nav.experiment import NavExperiment
    from curteach_teaching.experiments.nav.report import NavReport

    check_sweep_flags(args)  # every argument is checked before the folder is claimed or a dataset generated
    kind = NAV_TASKS[args.task]
    split_sizes, default_epochs, default_eval = SCALES[args.scale]
    check_split_sizes(split_sizes, kind)
    training = dict(DEMO_TRAINING) if args.scale == "demo" else {"loss": "original"}
    if args.loss is not None:
        training["loss"] = args.loss
    if args.max_batches is not None:
        training["max_batches"] = args.max_batches
    epochs = default_epochs if args.epochs is None else check_int("--epochs", args.epochs, 1)
    eval_every = default_eval if args.eval_every is None else check_int("--eval-every", args.eval_every, 1)
    if args.max_batches is not None:
        check_int("--max-batches", args.max_batches, 1)
    check_int("--lr-period", args.lr_period, 1)
    _check_dataset_source(args)
    curricula = tuple(c.strip() for c in args.curricula.split(",") if c.strip())
    if not curricula:
        raise ValueError(f"--curricula must name curricula ({','.join(CURRICULA)} or module:attr); got "
                         f"{args.curricula!r}")
    from curteach_teaching.curriculum.selection import check_variant

    for spec in curricula:  # a plug-in that does not load is refused here, before anything is written
        if spec not in CURRICULA:
            check_variant(spec)
    device = args.sweep_device  # resolved by check_sweep_flags ("auto" -> cuda or cpu; cuda without a GPU refused)
    out = output_folder(args, f"results/nav-{args.task}-{args.scale}")
    session = sweep_session(args, out)
    with session:  # one lock for the dataset, the sweep and the report: no second sweep generates the same file
        out.mkdir(parents=True, exist_ok=True)
        path, dataset = cached_dataset(out, kind, split_sizes, args.dataset_seed, given=args.dataset,
                                       workers=args.workers, progress=progress_wanted(args))
        digest = file_digest(path)
        session.data["dataset"] = (path, digest, dataset)
        hand_over(path, digest, dataset)  # runs in this process take it; other processes load and check the file
        experiment = NavExperiment(
            dataset=str(path),
            dataset_digest=digest,
            task=kind,
            curricula=curricula,
            epochs=epochs,
            eval_every=eval_every,
            lr_period=args.lr_period,
            **training,
            teacher_difficulty=args.teacher_difficulty,
            device=device,
            checkpoint_dir=_checkpoint_dir(args, out),
            progress=progress_wanted(args) and args.backend != "ray",
            # Ray workers on other nodes cannot read the driver's disk: the data travel with the experiment
            dataset_bytes=path.read_bytes() if args.backend == "ray" else None,
        )
        title = f"{args.task}, {args.scale} dataset"
        if experiment.optimizer != "sgd":  # the figure says it is not the paper's protocol
            title += (f" ({experiment.optimizer} at {experiment.learning_rate:g}, {experiment.loss} loss; "
                      "not the paper's protocol)")
        report = NavReport(experiment, window=experiment.window, title=title)
        return run_sweep_command(args, experiment, report, out, session=session)


def run_nav_show(args: argparse.Namespace) -> int:
    """Draw a trained policy's greedy rollout on one datapoint of a split."""
    from curteach_envs._util import check_int
    from curteach_teaching.experiments.nav.data import NAV_TASKS, cached_dataset
    from curteach_teaching.experiments.nav.show import draw_rollout, load_policy

    kind = NAV_TASKS[args.task]
    if args.out.suffix.lower() not in (".png", ".gif"):
        raise ValueError(f"--out must end in .png or .gif; got {str(args.out)!r}")
    # checked before a dataset is generated or anything written
    if not args.model.is_file():
        raise ValueError(f"--model {str(args.model)!r} is not a file (a run's model: DIR/runs/<curriculum>/"
                         "run_XXXXX.model.pt)")
    check_int("--index", args.index, 0)
    _check_dataset_source(args)
    policy = load_policy(args.model)  # a file that is not a model is refused before a dataset is generated
    folder = args.out.parent if str(args.out.parent) else Path(".")
    _, dataset = cached_dataset(folder, kind, SCALES[args.scale][0], args.dataset_seed, given=args.dataset,
                                progress=progress_wanted(args))
    split = dataset[args.split]
    check_int("--index", args.index, 0, split.n_demos - 1)
    total = draw_rollout(policy, split, args.index, args.out)
    print(f"wrote {args.out}: greedy rollout on {args.split} datapoint {args.index}, return {total:g} "
          f"(the stored demonstration's: {split['reward'][args.index]:g})")
    return 0
