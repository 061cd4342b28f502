"""``curteach dataset-bc``: the paper's learner-centric experiment on any Minari dataset of demonstrations."""

from __future__ import annotations

import argparse

from curteach_teaching.commands.learner_options import add_learner_arguments, resolve_learner_arguments
from curteach_teaching.commands.score_options import add_score_arguments
from curteach_teaching.commands.sweep_options import (
    add_sweep_arguments,
    check_sweep_flags,
    named_as_options,
    output_folder,
    progress_wanted,
    run_sweep_command,
    sweep_session,
)

#: ``--scale small``: a quick check of the whole path (minutes on two cores)
SMALL = {"max_batches": 200, "eval_every": 100, "eval_episodes": 5}


def add_parser(subparsers) -> None:
    """Register ``curteach dataset-bc``."""
    parser = subparsers.add_parser(
        "dataset-bc", help="curricula for behavioural cloning on any Minari dataset (learner-centric)",
        description="Train imitation's BC on a local Minari dataset (or several, one pool whose groups are the "
        "datasets) with the paper's curricula (Agn, Cur, Cur-L, Cur-T or plug-ins): the task difficulty of every "
        "demonstration beside the learner's own, Algorithm 2's pacing, an equal number of optimizer steps per epoch "
        "for every curriculum, seeded evaluations on held-out reset seeds (without an environment, as for robomimic "
        "and LeRobot data: the held-out demonstrations' likelihood), paired runs and paired statistics. Writes "
        "DIR/runs/, DIR/summary.csv, DIR/report.json, DIR/selection.csv and figures (each file: "
        "docs/experiments/dataset-bc.md).",
    )
    parser.add_argument("--dataset", required=True,
                        help="comma-separated dataset ids (under MINARI_DATASETS_PATH) or folders, in ladder order; a "
                        "folder holding several datasets reads them all")
    parser.add_argument("--env", default=None,
                        help="evaluate in this environment id instead of the datasets' own (ids of minigrid, "
                        "metaworld and curteach's own work as they are; another package's is written module:Id), or "
                        "'none': score held-out demonstrations instead (as for every robomimic file and LeRobot "
                        "dataset, which record no environment)")
    parser.add_argument("--obs-keys", default=None,
                        help="a robomimic file's or a LeRobot dataset's low-dimensional observation keys, "
                        "comma-separated, concatenated in this order (as for curteach rank)")
    parser.add_argument("--holdout", type=float, default=None,
                        help="without an environment: the share of each group's episodes held out (never trained "
                        "on nor scored by a teacher) and scored at every evaluation, in (0, 1); one seeded split per "
                        "--seed (default 0.2)")
    parser.add_argument("--holdout-field", default=None,
                        help="without an environment: hold out only episodes whose boolean metadata field is true, "
                        "a trusted subset (e.g. a robomimic filter key such as better)")
    parser.add_argument("--metric", choices=("return", "nll", "mse", "accuracy"), default=None,
                        help="the report's main metric: return (with an environment, the default) or, without one, "
                        "the held-out demonstrations' nll per step (the default; lower is better), mse of the greedy "
                        "action (continuous actions; lower is better) or accuracy (discrete; higher is better)")
    parser.add_argument("--curricula", default="Agn,Cur",
                        help="comma-separated cells CURRICULUM[@USE][/TASK]: Agn, Cur, Cur-L, Cur-T or module:attr, "
                        "optionally with their own use and task score, e.g. Cur-T@select/return (default Agn,Cur)")
    parser.add_argument("--use", choices=("order", "select", "weight"), default="order",
                        help="what cells that name no use do with their preference: order (Algorithm 2's pacing, "
                        "default), select (train on the --keep most preferred only) or weight (every episode, its "
                        "loss weighted by its preference)")
    parser.add_argument("--keep", type=float, default=0.6,
                        help="the fraction of episodes 'select' keeps, in (0, 1] (default 0.6)")
    parser.add_argument("--keep-within", choices=("pool", "group"), default="pool",
                        help="'select' cuts over the whole pool (default) or within each group, each dataset or task "
                        "keeping --keep of its own episodes (as rank --per-group)")
    parser.add_argument("--task-one-hot", action="store_true",
                        help="append a one-hot over the pool's groups (each dataset, robomimic file or LeRobot task a "
                        "task) to flat observations, so that one policy learns several tasks (Meta-World's pools of "
                        "two tasks or more get theirs without it)")
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="'weight': w = exp(preference / T), normalised to mean 1 (default 1)")
    add_score_arguments(parser)  # the trained scores' options (the ensemble's --ensemble-size, ...)
    parser.add_argument("--bad-field", default=None,
                        help="a boolean episode metadata field (True or False in every episode) marking bad episodes, "
                        "or not:FIELD for those where it is False (not:success: the failed ones), or several, "
                        "comma-separated; the report says how many of them each cell dropped or down-weighted "
                        "(default: noisy, where every episode has it)")
    from curteach_teaching.datasets.scores.registry import describe_task_scores

    parser.add_argument("--task-difficulty", default=None,
                        help="the teacher's difficulty of a demonstration, larger = harder: "
                        f"{describe_task_scores().replace('%', '%%')}; a metadata or info field, not:FIELD (1 where a "
                        "boolean field is false), module:attr, or a weighted sum of standardised scores, e.g. "
                        "ensemble+100*not:success (the ensemble's ranking, failures last) (default: level for "
                        "several datasets, else length)")
    parser.add_argument("--learner-difficulty", choices=("per-step", "sum"), default="per-step",
                        help="the learner's difficulty per step (default) or summed over the demonstration (the "
                        "paper's)")
    parser.add_argument("--difficulty-scale", choices=("standard", "raw"), default="standard",
                        help="standardise both difficulties over the pool before combining them (default) or not")
    parser.add_argument("--budget", choices=("equal", "per-epoch"), default="equal",
                        help="'equal': every epoch the same optimizer steps for every curriculum (default); "
                        "'per-epoch': one pass over the epoch's selection (the paper's)")
    parser.add_argument("--max-batches", type=int, default=None, help="optimizer steps per run (default 1000)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="pacing schedule length (default: as many epochs as --max-batches fills)")
    parser.add_argument("--eval-every", type=int, default=None, help="evaluate every K steps (default 250)")
    parser.add_argument("--eval-episodes", type=int, default=None,
                        help="held-out episodes per dataset per evaluation (default 20)")
    parser.add_argument("--no-sampled", action="store_true", help="evaluate greedy actions only")
    add_learner_arguments(parser, whose="the learner's policy and the ensemble teacher's")
    parser.add_argument("--target", type=float, default=None,
                        help="the value of --metric whose reaching is timed in the paired statistics, in its units "
                        "(default: Agn's start plus 90%% of its improvement)")
    parser.add_argument("--paired-against", default=None,
                        help="comma-separated cells that every other cell is also compared with, run by run, as with "
                        "Agn: a control the curricula must beat, e.g. a length-only selection (Cur-T@select/length); "
                        "named as in --curricula or as the cell (report.json's paired_against; a report option: "
                        "--report-only adds it to a finished sweep)")
    parser.add_argument("--scale", choices=("default", "small"), default="default",
                        help="'small': a quick check (200 steps, 5 evaluation episodes)")
    add_sweep_arguments(parser, default_runs=5, default_out="results/dataset-bc", device=True)
    parser.set_defaults(func=run_dataset_bc)


def run_dataset_bc(args: argparse.Namespace) -> int:
    """Read the pool, check every flag, run (or resume) the sweep and write its report."""
    from curteach_teaching.datasets import format_of, read_pool
    from curteach_teaching.datasets.prepared import success_defined
    from curteach_teaching.datasets.scores.registry import level_order, score_terms, trained_options
    from curteach_teaching.experiments.dataset_bc.data_record import check_data, data_document, record_data
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment
    from curteach_teaching.experiments.dataset_bc.migrate import upgrade_folder
    from curteach_teaching.experiments.dataset_bc.report import DatasetBCReport
    from curteach_teaching.experiments.dataset_bc.upgrade_digest import upgrade_digest
    from curteach_teaching.sweeps.backends import fit_threads
    from curteach_teaching.sweeps.interrupts import announce, interruption_message

    check_sweep_flags(args)
    resolve_learner_arguments(args)  # a hyper-parameter of another --policy: one line, before any reading
    sources = tuple(s.strip() for s in args.dataset.split(",") if s.strip())
    if not sources:
        raise ValueError("--dataset must name at least one dataset")
    obs_keys = None if args.obs_keys is None else tuple(k.strip() for k in args.obs_keys.split(",") if k.strip())
    env_id = None if args.env == "none" else args.env
    pool = read_pool(list(sources), env_id=env_id, obs_keys=obs_keys)  # the one read: the runs get the prepared data
    holdout = held_out_fraction(args, pool)
    if holdout is None and args.env is None:  # the datasets' own environments: their packages must be installed
        check_recorded_envs(pool)
    scale = SMALL if args.scale == "small" else {}
    chosen = {"max_batches": args.max_batches, "eval_every": args.eval_every, "eval_episodes": args.eval_episodes}
    settings = {k: v if v is not None else scale.get(k) for k, v in chosen.items()}
    settings = {k: v for k, v in settings.items() if v is not None}
    # a ladder's rank by default where the groups are datasets given as one, not a suite of tasks the format
    # reads as groups (a LeRobot dataset's tasks, a folder of robomimic files: LIBERO's)
    ladder = len(pool.group_names) > 1 and not any(format_of(source).groups_are_tasks(source) for source in sources)
    task = args.task_difficulty or ("level" if ladder else "length")
    # a setting named otherwise than its flag: the flag in the message (--seed must be ..., not teacher_seed)
    renamed = {"teacher_seed": "seed", "learner_term": "learner_difficulty", "scale": "difficulty_scale"}
    with named_as_options(args, renamed):
        experiment = DatasetBCExperiment(
            env_id=args.env,  # the digest: prepare() computes it once, from the pool
            curricula=tuple(c.strip() for c in args.curricula.split(",") if c.strip()), task_difficulty=task,
            learner_term=args.learner_difficulty, scale=args.difficulty_scale, budget=args.budget,
            epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
            sampled=not args.no_sampled, policy=args.policy, use=args.use, keep=args.keep,
            temperature=args.temperature, keep_within=args.keep_within, task_one_hot=args.task_one_hot,
            learner_options=args.learner_options,
            **{option.name: getattr(args, option.name) for option in trained_options()},  # the trained scores'
            teacher_seed=args.seed, device=args.sweep_device, holdout=holdout, holdout_field=args.holdout_field,
            obs_keys=obs_keys, **settings,
        )
    with named_as_options(args, renamed):  # --holdout-field must be ..., as the flag is spelt
        experiment = experiment.prepare(pool)  # a bad score, space or policy fails before the folder is touched
    conditioning = task_conditioning(experiment.data.codec)
    if conditioning:
        print(conditioning, flush=True)
    if any("level" in score_terms(task) for task in experiment.tasks()):
        print(level_order(pool), flush=True)  # which dataset is which level: a folder's order is its names'
    report_out_of_bounds(pool)
    out = output_folder(args, "results/dataset-bc")
    with named_as_options(args):  # --target must be ..., --bad-field must be ...
        report = DatasetBCReport(experiment, pool, success=holdout is None and success_defined(pool),
                                 target=args.target, title=figure_title(pool.group_names),
                                 bad_field=args.bad_field, metric=args.metric)
    report.more_baselines = further_baselines(args.paired_against, experiment)
    session = sweep_session(args, out)
    with session:
        for upgraded in [*upgrade_folder(out, args.seed), upgrade_digest(out, pool, experiment)]:
            if upgraded:
                print(upgraded)
        if not args.overwrite:  # before the fit: data a run reads differently are refused at once
            rekeyed = check_data(out, pool, experiment, args.seed)
            if rekeyed:
                print(rekeyed, flush=True)
        if experiment.unfitted() and not args.report_only:
            with interruption_message(lambda: "interrupted while fitting the trained task scores; nothing of them "
                                      "is saved (run the same command again)"):
                try:
                    with fit_threads():  # one math thread unless OMP_NUM_THREADS asks for more
                        experiment = experiment.fit(teacher_cache=str(out / "teachers"),
                                                    progress=progress_wanted(args),
                                                    say=lambda line: print(line, flush=True))
                except KeyboardInterrupt:
                    announce()
                    raise
        try:
            return run_sweep_command(args, experiment, report, out, session=session)
        finally:  # what the folder's sweep was made on, part by part (also after an interrupt: runs were written)
            if not args.report_only:
                record_data(out, data_document(pool, experiment))


def task_conditioning(codec) -> str:
    """One line naming the tasks of a task one-hot over the pool's groups (asked for), else ``""``."""
    if codec is None or not getattr(codec, "by_group", False):
        return ""
    tasks = list(codec.tasks)
    named = ", ".join(tasks[:4]) + (f" and {len(tasks) - 4} more" if len(tasks) > 4 else "")
    return f"task one-hot: the learner sees which of the pool's {len(tasks)} groups an episode is from ({named})"


def further_baselines(text: str | None, experiment) -> tuple:
    """The cells of ``--paired-against`` (each named as in ``--curricula`` or as its cell), in order; ``ValueError``
    for a name that is not a cell of the sweep, or for Agn, the baseline already."""
    if text is None:
        return ()
    cells = experiment.curriculum_names()  # cell -> spec
    by_name = {**{spec: cell for cell, spec in cells.items()}, **{cell: cell for cell in cells}}
    out = []
    for name in (n.strip() for n in text.split(",")):
        if not name:
            continue
        if name not in by_name:
            raise ValueError(f"--paired-against names {name!r}, which is not a cell of this sweep "
                             f"({', '.join(cells)})")
        if by_name[name] == "Agn":
            raise ValueError("--paired-against names Agn, which every cell is compared with already")
        if by_name[name] not in out:
            out.append(by_name[name])
    return tuple(out)


def figure_title(groups) -> str:
    """The figures' title: the pool's datasets by name (not by path), the first three and a count of the rest."""
    groups = [g if len(g) <= 40 else g[:39] + "…" for g in map(str, groups)]  # a LeRobot task is a sentence
    named = ", ".join(groups[:3]) + (f" and {len(groups) - 3} more" if len(groups) > 3 else "")
    return f"dataset-bc: {named}"


def held_out_fraction(args: argparse.Namespace, pool) -> float | None:
    """``None`` where the runs evaluate in an environment, else the share of episodes held out (``--holdout``,
    default 0.2): with ``--env none``, or when no group of the pool records an environment.

    Raises:
        ValueError: some groups with an environment and some without, or a flag of the other way of evaluating.
    """
    missing = [group for group, spec in pool.env_specs.items() if spec is None]
    if args.env != "none" and missing and len(missing) < len(pool.env_specs):
        raise ValueError(f"no environment is known for {', '.join(missing)}: give --env ID to evaluate every dataset "
                         "in, or --env none to score held-out demonstrations instead")
    if args.env != "none" and not missing:
        given = [flag for flag, value in (("--holdout", args.holdout), ("--holdout-field", args.holdout_field))
                 if value is not None]
        if given:
            raise ValueError(f"{' and '.join(given)} appl{'y' if len(given) > 1 else 'ies'} only without an "
                             "environment (scoring held-out "
                             "demonstrations); give --env none to evaluate so instead of in the environment")
        return None
    used = [flag for flag, value in (("--eval-episodes", args.eval_episodes), ("--no-sampled", args.no_sampled or None))
            if value is not None]
    if used:
        raise ValueError(f"{' and '.join(used)} set the rollouts in an environment; without one the held-out "
                         "demonstrations are scored (--holdout)")
    return 0.2 if args.holdout is None else args.holdout


def check_recorded_envs(pool) -> None:
    """Every environment the pool records loads (its entry point's package is installed), checked before anything
    runs or is written.

    Raises:
        ValueError: one line naming the dataset and the missing package, and the two ways on (``--env none``,
            ``--env ID``).
    """
    from curteach_teaching.datasets.env_ids import check_entry_point

    for group, spec in pool.env_specs.items():
        try:
            check_entry_point(spec)
        except ValueError as error:
            raise ValueError(f"dataset {group!r}: {error}; install it, or give --env none to score held-out "
                             "demonstrations instead, or --env ID to evaluate in another environment") from None


def report_out_of_bounds(pool) -> None:
    """One line when demonstrated actions lie outside the action space's bounds (trained on and scored as given)."""
    import numpy as np

    from curteach_teaching.learners.actions import outside_bounds

    counts = outside_bounds(pool.action_space, [t.acts for t in pool.trajectories])
    if counts.any():
        episodes = np.flatnonzero(counts)
        named = ", ".join(str(i) for i in episodes[:5]) + (", ..." if episodes.size > 5 else "")
        print(f"note: {int(counts.sum())} demonstrated actions in {episodes.size} episodes (pool indices {named}) lie "
              "outside the action space's bounds; they are trained on and scored as given, never clipped", flush=True)

