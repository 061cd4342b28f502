"""``curteach rank``: score every demonstration of a dataset, keep the most preferred share and write that subset in
the source's own terms (a robomimic filter key, a LeRobot episode list, a Minari dataset), beside a length-only
control.

The scoring is the prepare step ``dataset-bc`` calls too (:mod:`~curteach_teaching.datasets.prepare`: encode, score,
fit the trained scores once, cached in ``DIR/teachers``); ``rank`` names no score, codec or learner of its own and
only writes its outputs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from curteach_envs._util import check_int, counted
from curteach_teaching.commands.learner_options import (
    add_learner_arguments,
    learner_record,
    resolve_learner_arguments,
)
from curteach_teaching.commands.score_options import add_score_arguments
from curteach_teaching.learners.hyperparameters import options_label


def add_parser(subparsers) -> None:
    """Register ``curteach rank``."""
    parser = subparsers.add_parser(
        "rank", help="score every demonstration of a dataset and keep the best share (robomimic, LeRobot, Minari)",
        description="Score every demonstration of one dataset (a robomimic .hdf5 file, a LeRobot folder or a Minari "
        "dataset), rank them (lowest difficulty first) and, with --keep, write the kept share in the source's own "
        "terms: a robomimic filter key added to the file, DIR/episodes.json for LeRobotDataset(..., episodes=...), "
        "or a new Minari dataset. Writes DIR/scores.csv, DIR/rank.json (with the length-only control: the Spearman "
        "correlation of the score with episode length) and DIR/scores.png where there are groups "
        "(docs/curate-a-robot-dataset.md).",
    )
    parser.add_argument("--dataset", required=True,
                        help="a robomimic-format .hdf5/.h5 file or a folder of them (a LIBERO suite: each file gets "
                        "its filter key), a LeRobot dataset folder (with meta/info.json), or a Minari dataset id or "
                        "folder; several of one format comma-separated, ranked together (one cut over all)")
    parser.add_argument("--obs-keys", default=None,
                        help="comma-separated low-dimensional observation keys, concatenated in this order "
                        "(robomimic: obs/<key>, default every key when there are no image keys; LeRobot: features, "
                        "default observation.state)")
    parser.add_argument("--score", default="ensemble",
                        help="the difficulty of a demonstration, larger = dropped first: ensemble (BC policies on "
                        "bootstrap halves; a demonstration's held-out negative log-likelihood per step), length, "
                        "return (minus the return), a numeric or boolean metadata field (a robomimic filter key such "
                        "as worse), not:FIELD (1 where a boolean field is false), a weighted sum of standardised "
                        "scores (ensemble+100*not:success: the ensemble's ranking, failures last), or module:attr "
                        "(default ensemble)")
    parser.add_argument("--keep", type=float, default=None,
                        help="the fraction of demonstrations to keep, in (0, 1]; without it only the scores are "
                        "written (with --compare: the share each score's cut keeps, default 0.5)")
    parser.add_argument("--per-group", action="store_true",
                        help="make the --keep cut within each group (each task keeps --keep of its own "
                        "demonstrations; the groups of --group-field, else the dataset's: LeRobot tasks, robomimic "
                        "files, Minari datasets) instead of over the whole pool, where a task whose demonstrations "
                        "score harder can be dropped whole")
    parser.add_argument("--filter-key", default=None,
                        help="robomimic: the filter key to add (mask/NAME); Minari: the kept dataset is "
                        "<name>-NAME-v0 (default curated)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing filter key or kept Minari dataset of that name instead of refusing")
    parser.add_argument("--in-place", action="store_true",
                        help="robomimic: add the filter key to the file itself instead of to a copy that then "
                        "replaces it, for a file too large to copy (needs no free space; an interrupt or a full disk "
                        "while the key is written can damage the file)")
    parser.add_argument("--group-field", default=None,
                        help="group the summary and the plot by this metadata field, or by the first true of "
                        "several comma-separated boolean fields, e.g. better,okay,worse (default: the dataset's "
                        "groups, LeRobot's tasks, where there are several)")
    parser.add_argument("--compare", default=None, metavar="SCORES",
                        help="compare comma-separated scores of the registry (e.g. length,ensemble) on the dataset "
                        "instead of ranking by --score: per score its AUROC against --label, its Spearman correlation "
                        "with episode length, the share of its kept set (--keep, default 0.5) that length's cut keeps "
                        "too, its fit time, and the same with length's share removed; length is always included. "
                        "Writes DIR/compare.json and DIR/compare.png and nothing into the dataset")
    parser.add_argument("--label", default=None, metavar="FIELD",
                        help="with --compare: the boolean field each score's AUROC is measured against, larger score "
                        "= predicted true (a robomimic filter key such as worse, a Minari field such as noisy, "
                        "not:success; a field true for good episodes, such as better, reads below 0.5)")
    add_score_arguments(parser)  # the trained scores' options (the ensemble's --ensemble-size, ...)
    parser.set_defaults(ensemble_fit="batched")  # rank keeps no sweep: the fast fit (dataset-bc's stays sequential)
    parser.add_argument("--task-one-hot", action="store_true",
                        help="a trained score sees a one-hot over the pool's groups (each a task) appended to flat "
                        "observations, as dataset-bc --task-one-hot (Meta-World's pools get theirs without it)")
    add_learner_arguments(parser, whose="the trained scores' policy, as dataset-bc's")
    parser.add_argument("--seed", type=int, default=0, help="the trained scores' seed (default 0)")
    from curteach_teaching.sweeps.devices import DEVICES

    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where the trained scores train: cpu (default), cuda (refused without a GPU) or auto")
    parser.add_argument("--out", default=None,
                        help="output folder (default results/rank; outside the dataset's folder). A folder of an "
                        "earlier rank is reused: its ensemble cache is read, and its outputs that this ranking does "
                        "not write again (episodes.json, scores.png) are removed, so that none describes another "
                        "ranking")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=run_rank)


def rank_scores(pool, score: str, *, trained: dict | None = None, policy: str = "auto", device: str = "cpu",
                seed: int = 0, cache: Path | None = None, progress: bool = False, task_one_hot: bool = False,
                batch_size: int = 64, learning_rate: float = 1e-3, learner_options: tuple = ()) -> np.ndarray:
    """``(N,)`` float64 difficulty of every episode of ``pool``, larger = less preferred: the prepare step's
    (:func:`~curteach_teaching.datasets.prepare.prepare`, then
    :func:`~curteach_teaching.datasets.prepare.fit_scores` for the trained scores ``score`` reads, ``trained``:
    ``name -> trained score``, each cached in ``cache`` under the policy, training learners of ``policy`` with
    ``batch_size``, ``learning_rate`` and the hyper-parameters ``learner_options``, which key the cache too where
    given; ``task_one_hot``: they see a one-hot over the pool's groups). The one place ``rank`` scores."""
    from curteach_teaching.datasets.prepare import fit_scores, learner_factory, prepare
    from curteach_teaching.datasets.scores.registry import trained_terms

    needed = trained_terms([score])
    data = prepare(pool, [score], policy=policy if needed else None, task_one_hot=task_one_hot)
    if needed:
        if getattr(data.codec, "by_group", False):
            print(f"task one-hot: the trained scores see which of the pool's {len(data.codec.tasks)} groups an "
                  "episode is from", flush=True)
        learner = learner_factory(policy, data, batch_size=batch_size, learning_rate=learning_rate, device=device,
                                  options=learner_options)
        # said whether or not a bar is drawn (what it fits, a damaged cache, how long it took); the cache key's
        # data digest covers the observations read
        data = fit_scores(data, [score], trained or {}, learner=learner, device=device, seed=seed, cache=cache,
                          label=f"rank|{policy}{options_label(learner_options)}", progress=progress,
                          say=lambda line: print(line, flush=True))
    return np.asarray(data.task_scores[score], dtype=np.float64)


def _ties(ranking, within, keep: float) -> dict | list | None:
    """The ties at the cut: :meth:`~curteach_teaching.datasets.curation.Ranking.ties_at_cut` of the whole pool, or,
    for a cut within groups, a list of each group's (with its ``group``), ``None`` without any."""
    from curteach_teaching.datasets.curation import rank_episodes

    if within is None:
        return ranking.ties_at_cut()
    labels, found = np.asarray(within, dtype=object), []
    for group in dict.fromkeys(labels.tolist()):
        members = labels == group
        tied = rank_episodes(ranking.difficulty[members], keep).ties_at_cut()
        if tied is not None:
            found.append({"group": str(group), **tied})
    return found or None


def _summary(ranking, groups, order, lengths, within=None) -> dict:
    from curteach_teaching.datasets.curation import length_control

    out = {"episodes": int(ranking.difficulty.size), "kept": ranking.n_kept,
           "length_control": length_control(ranking, lengths, within)}
    if groups is not None:
        groups = np.asarray(groups)
        out["groups"] = {str(g): {"episodes": int(np.sum(groups == g)), "kept": int(np.sum(ranking.kept[groups == g])),
                                  "mean_score": float(ranking.difficulty[groups == g].mean())}
                         for g in order}
    return out


def _sources(text: str) -> tuple[list[str], object]:
    """``(sources, format)`` of ``--dataset``: the comma-separated sources and their one format
    (:class:`~curteach_teaching.datasets.formats.base.DatasetFormat`). Raises ValueError for mixed formats or sources
    whose kept share cannot be written together (several LeRobot datasets: one ``episodes.json`` names one dataset's
    episodes)."""
    from curteach_teaching.datasets.formats import format_of

    sources = [s.strip() for s in str(text).split(",") if s.strip()]
    if not sources:
        raise ValueError("--dataset must name at least one dataset")
    found = {source: format_of(source) for source in sources}
    if len({fmt.name for fmt in found.values()}) > 1:
        raise ValueError("--dataset mixes formats (" + ", ".join(f"{s}: {f.name}" for s, f in found.items())
                         + "); rank one format at a time")
    fmt = found[sources[0]]
    fmt.check_sources(sources)
    return sources, fmt


def _remove_earlier_outputs(out: Path, writes: dict) -> None:
    """Remove the files of an earlier rank in ``out`` that this one does not write again (``writes``: name ->
    whether it does; every format's kept files are among the names), so that no file there describes another
    ranking; one line each."""
    from curteach_teaching.datasets.formats import formats

    writes = {**{name: False for other in formats() for name in other.kept_files}, **writes}
    if not (out / "rank.json").is_file():
        return  # not a folder of rank's: nothing of ours to remove
    for name, written in writes.items():
        if not written and (out / name).is_file():
            (out / name).unlink()
            print(f"removed {out / name}, the earlier ranking's in this folder (this one writes none)")


def _report(args, sources, fmt, obs_keys, summary: dict, ties, trained: dict, written: list) -> dict:
    """``rank.json``'s contents; ``outputs``: what was written before it, ``[{"path", "what"}]`` (paths a script can
    open, apart from the words); every built-in trained score's key (null where not read), then what each read one
    trained with (``trained``: name -> trained score)."""
    from curteach_teaching.datasets.scores.registry import trained_names

    return {"command_line": getattr(args, "command_line", None),
            "source": sources[0] if len(sources) == 1 else sources, "format": fmt.name,
            "obs_keys": obs_keys, "score": args.score, "keep": args.keep,
            "per_group": bool(args.per_group), **({"task_one_hot": True} if args.task_one_hot else {}),
            **summary, "ties_at_cut": ties,
            "outputs": [{"path": o.path, "what": o.what} for o in written],
            **dict.fromkeys(trained_names()),
            **{name: {**score.describe(), "seed": args.seed, "policy": args.policy, **learner_record(args)}
               for name, score in trained.items()}}


def _print_summary(args, pool, sources, fmt, ranking, summary: dict, ties, within, written: list) -> None:
    """rank's closing lines: what was scored and kept, per group, ties at the cut, the length-only control, and what
    was written (the kept share's outputs with what each is)."""
    control = summary["length_control"]
    rho, share = control["spearman_length"], control["kept_by_length_too"]
    print(f"rank: {counted(len(pool), 'episode')} of {', '.join(sources)} ({fmt.name}) scored by {args.score}"
          + (f"; kept {ranking.n_kept} (--keep {args.keep:g}{' within each group' if within else ''}), dropped "
             f"{len(pool) - ranking.n_kept}" if args.keep is not None else ""))
    for group, row in summary.get("groups", {}).items():
        print(f"  {group}: {counted(row['episodes'], 'episode')}, kept {row['kept']}, mean score "
              f"{row['mean_score']:.4g}")
    for tie in [ties] if isinstance(ties, dict) else ties or []:  # the score does not decide these: say so
        where = f" of {tie['group']}" if "group" in tie else ""
        print(f"  note: {tie['episodes']} episodes{where} share the score at the cut ({tie['score']:.6g}); "
              f"{tie['kept']} of them {'is' if tie['kept'] == 1 else 'are'} kept, those first in the dataset (the "
              "score does not choose among them)")
    print("  length-only control: Spearman correlation of the score with episode length "
          + ("undefined (constant)" if rho is None else f"{rho:+.3f}")
          + ("" if share is None else f"; {share:.0%} of the kept episodes are among the {ranking.n_kept} shortest"
             + (" (as many of each group's)" if within else "")))
    for output in written:
        if Path(output.path).name not in ("scores.csv", "scores.png", "rank.json"):  # the kept share: how to use it
            print(f"  {output.path}: {output.what}")
    print("wrote " + ", ".join(o.path for o in written), flush=True)


def run_rank(args: argparse.Namespace) -> int:
    """Read, check, score, rank, and write the outputs (the kept share in the source's terms before rank.json);
    ``--compare`` (and ``--label``) are :func:`~curteach_teaching.commands.rank_compare.run_compare`'s."""
    resolve_learner_arguments(args)  # a hyper-parameter of another --policy: one line, before any reading
    if args.compare is not None or args.label is not None:
        from curteach_teaching.commands.rank_compare import run_compare

        return run_compare(args, rank_scores, _sources)  # rank's scoring step and --dataset reading, handed over
    from curteach_teaching.commands.rank_outputs import (
        check_out_outside,
        check_outputs,
        replace_file,
        write_kept,
        write_outputs,
    )
    from curteach_teaching.commands.sweep_options import named_as_options, output_folder, progress_wanted
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.curation import (
        episode_groups,
        group_order,
        plot_scores,
        rank_episodes,
        rank_within_groups,
        write_scores_csv,
    )
    from curteach_teaching.datasets.formats.base import Output
    from curteach_teaching.datasets.scores.registry import (
        level_order,
        score_terms,
        trained_score,
        trained_terms,
    )
    from curteach_teaching.sweeps.backends import fit_threads
    from curteach_teaching.sweeps.devices import resolve_device, run_device
    from curteach_teaching.sweeps.interrupts import announce, interruption_message

    device = resolve_device(args.device)  # --device cuda without a GPU: one line, before any reading
    with named_as_options(args):  # a trained score's bad option (--ensemble-size must ...): before any reading
        check_int("seed", args.seed, 0)
        trained = {name: trained_score(name, vars(args)) for name in trained_terms([args.score])}
    obs_keys = None if args.obs_keys is None else [k.strip() for k in args.obs_keys.split(",") if k.strip()]
    sources, fmt = _sources(args.dataset)
    pool = read_pool(sources, obs_keys=obs_keys)
    key = "curated" if args.filter_key is None else args.filter_key
    if args.keep is not None:
        with named_as_options(args):
            rank_episodes(np.zeros(1), args.keep)  # a bad --keep is refused before any scoring
    elif args.per_group:
        raise ValueError("--per-group makes the --keep cut within each group: give --keep too")
    groups = episode_groups(pool, args.group_field)
    within = (groups if groups is not None else list(pool.groups)) if args.per_group else None
    out = output_folder(args, "results/rank")
    check_out_outside(out, sources)
    check_outputs(args, fmt, sources, pool, key, out)
    if "level" in score_terms(args.score):
        print(level_order(pool), flush=True)
    with interruption_message(lambda: "interrupted while scoring; nothing was written (run the same command again)"):
        try:
            with fit_threads():  # one math thread unless OMP_NUM_THREADS asks for more
                difficulty = rank_scores(pool, args.score, trained=trained, policy=args.policy,
                                         device=run_device(device), seed=args.seed, cache=out / "teachers",
                                         progress=progress_wanted(args), task_one_hot=args.task_one_hot,
                                         batch_size=args.batch_size, learning_rate=args.learning_rate,
                                         learner_options=args.learner_options)
        except KeyboardInterrupt:
            announce()
            raise
    keep = 1.0 if args.keep is None else args.keep
    ranking = rank_episodes(difficulty, keep) if within is None else rank_within_groups(difficulty, within, keep)
    out.mkdir(parents=True, exist_ok=True)  # checked before the scoring, created after it
    _remove_earlier_outputs(out, writes={**{name: args.keep is not None for name in fmt.kept_files},
                                         "scores.png": groups is not None})
    order = None if groups is None else group_order(groups, args.group_field)
    summary = _summary(ranking, groups, order, pool.lengths, within)
    ties = None if args.keep is None else _ties(ranking, within, keep)
    with_kept = args.keep is not None

    def kept_share(done):
        return write_kept(args, fmt, sources, pool, ranking, key, out)

    def scores_csv(done):
        path = replace_file(out / "scores.csv", lambda target: write_scores_csv(
            target, pool, ranking, groups, fmt.episode_names(pool), with_kept=with_kept))
        return [Output(str(path), "one row per demonstration: its score and rank"
                       + (", and whether it is kept" if with_kept else ""))]

    def scores_png(done):
        name = Path(sources[0]).name if len(sources) == 1 else f"{len(sources)} datasets"
        title = f"{name}: {args.score}" + (f", keep {args.keep:g}" if args.keep else "")
        what = args.group_field or fmt.group_word
        path = replace_file(out / "scores.png", lambda target: plot_scores(
            target, ranking, groups, order, title, xlabel=what, cut_within=within is not None))
        return [Output(str(path), f"the scores by {what}, the kept filled, with the cut"
                       + (f" of each {what}" if within is not None else ""))]

    def rank_json(done):
        report = _report(args, sources, fmt, obs_keys, summary, ties, trained, done)
        path = replace_file(out / "rank.json", lambda target: target.write_text(json.dumps(report, indent=2) + "\n"))
        return [Output(str(path), "the settings, the counts, the length-only control and the outputs")]

    # the selection first, so that scores.csv's kept column and rank.json describe a selection that was written
    steps = [*([("the kept share", kept_share)] if with_kept else []), ("scores.csv", scores_csv),
             *([("scores.png", scores_png)] if groups is not None else []), ("rank.json", rank_json)]
    rerun = "run the same command again" + (" with --overwrite (the kept share may be written)"
                                            if with_kept and not args.overwrite else "")
    write_outputs(out, steps, rerun=rerun, then=lambda written: _print_summary(
        args, pool, sources, fmt, ranking, summary, ties, within, written))
    return 0
