"""``curteach rank --compare SCORES [--label FIELD]``: every listed score on one dataset, side by side with length.

Each score (a name of the score registry, plain or trained, or a weighted sum) is fitted through ``rank``'s one
scoring step (:func:`~curteach_teaching.commands.rank.rank_scores`, which ``rank`` hands over: trained scores fitted
once, cached in ``DIR/teachers``) and timed; the table (:func:`~curteach_teaching.datasets.compare.compare_scores`)
is printed and written as ``DIR/compare.json``, with ``DIR/compare.png``, each score against length. Nothing is
written into the dataset. Every name, the label and every trained score's options are checked before anything fits.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from curteach_envs._util import check_int, counted

__all__ = ["compare_names", "run_compare"]

#: the reference every comparison includes, first: the registry's episode length
REFERENCE = "length"
#: the share kept when --compare is given without --keep
DEFAULT_KEEP = 0.5


def compare_names(text: str) -> list[str]:
    """The score names of ``--compare`` (comma-separated, each once, in order), :data:`REFERENCE` first.

    Raises:
        ValueError: no name given.
    """
    names = list(dict.fromkeys(name.strip() for name in str(text).split(",") if name.strip()))
    if not names:
        raise ValueError("--compare must name at least one score, e.g. --compare ensemble or length,ensemble")
    return [REFERENCE, *(name for name in names if name != REFERENCE)]


def _check_flags(args: argparse.Namespace) -> float:
    """The share kept; refuses ``--label`` without ``--compare`` and the flags that say where a kept share is
    written (a comparison writes nothing into the dataset)."""
    if args.compare is None:
        raise ValueError("--label names the field --compare measures each score against: give --compare too")
    writing = [flag for flag, given in (("--filter-key", args.filter_key is not None), ("--in-place", args.in_place),
                                        ("--overwrite", args.overwrite)) if given]
    if writing:
        raise ValueError(f"--compare writes nothing into the dataset; drop {', '.join(writing)} (rank one score "
                         "with --score and --keep to write its kept share)")
    keep = DEFAULT_KEEP if args.keep is None else args.keep
    from curteach_teaching.commands.sweep_options import named_as_options
    from curteach_teaching.datasets.curation import rank_episodes

    with named_as_options(args):
        rank_episodes(np.zeros(1), keep)  # a bad --keep, before any reading
    return keep


def _check_names(pool, names: list[str]) -> None:
    """Every plain term of every name computed once on ``pool`` (a misspelt name is refused here, in one line,
    before any trained score fits; the trained ones were built from their options already)."""
    from curteach_teaching.datasets.scores.registry import is_trained, score_terms, task_difficulty

    for name in names:
        for term in score_terms(name):
            if not is_trained(term):
                task_difficulty(pool, term)


def _cell(value, digits: str) -> str:
    return "-" if value is None else format(value, digits)


def table_lines(rows: dict) -> list[str]:
    """The printed table of :func:`~curteach_teaching.datasets.compare.compare_scores`' ``rows``: one line per
    score (its AUROC, its Spearman with length, the kept overlap with length's cut, its fit time,
    then the same AUROC and Spearman of its residual on length)."""
    width = max(len("score"), *(len(name) for name in rows))
    head = (f"{'score':<{width}}  {'AUROC':>6}  {'rho_len':>7}  {'kept_len':>8}  {'seconds':>8}  "
            f"{'resid_AUROC':>11}  {'resid_rho':>9}")
    lines = [head]
    for name, row in rows.items():
        lines.append(f"{name:<{width}}  {_cell(row['auroc'], '.3f'):>6}  {_cell(row['spearman_length'], '+.3f'):>7}  "
                     f"{_cell(row['kept_overlap_length'], '.0%'):>8}  {_cell(row['seconds'], '.2f'):>8}  "
                     f"{_cell(row['residual_auroc'], '.3f'):>11}  "
                     f"{_cell(row['residual_spearman_length'], '+.3f'):>9}")
    return lines


def run_compare(args: argparse.Namespace, rank_scores: Callable, sources_of: Callable) -> int:
    """Check every input, fit and time each score, and write ``compare.json`` and ``compare.png``.

    ``rank_scores`` is rank's one scoring step (:func:`~curteach_teaching.commands.rank.rank_scores`) and
    ``sources_of`` its reading of ``--dataset`` (``text -> (sources, format)``), handed over by ``run_rank`` (this
    module does not import ``rank``, which imports it)."""
    from curteach_teaching.commands.learner_options import learner_record
    from curteach_teaching.commands.rank_outputs import check_out_outside
    from curteach_teaching.commands.sweep_options import named_as_options, output_folder, progress_wanted
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.compare import compare_scores, plot_compare
    from curteach_teaching.datasets.curation import episode_groups
    from curteach_teaching.datasets.labels import bad_episodes
    from curteach_teaching.datasets.prepare import check_environment
    from curteach_teaching.datasets.scores.registry import trained_score, trained_terms
    from curteach_teaching.sweeps.backends import fit_threads
    from curteach_teaching.sweeps.devices import resolve_device, run_device
    from curteach_teaching.sweeps.interrupts import announce, interruption_message

    keep = _check_flags(args)
    names = compare_names(args.compare)
    device = resolve_device(args.device)
    with named_as_options(args):  # a trained score's bad option, and a name that is no score, before any reading
        check_int("seed", args.seed, 0)
        trained = {name: trained_score(name, vars(args)) for name in trained_terms(names)}
    obs_keys = None if args.obs_keys is None else [k.strip() for k in args.obs_keys.split(",") if k.strip()]
    sources, fmt = sources_of(args.dataset)
    out = output_folder(args, "results/rank")
    check_out_outside(out, sources)
    pool = read_pool(sources, obs_keys=obs_keys)
    label = None
    if args.label is not None:
        with named_as_options(args):  # "--label must be a boolean metadata field ..."
            label = bad_episodes(pool, args.label, what="label")
    _check_names(pool, names)
    check_environment(pool, names)  # demo-score on data without an environment, before any score is fitted
    groups = episode_groups(pool, args.group_field)
    within = (groups if groups is not None else list(pool.groups)) if args.per_group else None
    if trained:
        # torch imports its compiler the first time an optimizer is built (about 2 s, once per process): built once
        # here, untimed, so that the first trained score's seconds do not carry it and the others' do not lack it
        import torch

        torch.optim.Adam([torch.zeros(1, requires_grad=True)])  # no random draw: no trained score's number moves
    values, seconds = {}, {}
    with interruption_message(lambda: f"interrupted while scoring ({len(values)} of {len(names)} scores done); "
                              "nothing was written (run the same command again: fitted scores are cached)"):
        try:
            with fit_threads():
                for name in names:
                    start = time.perf_counter()
                    values[name] = rank_scores(pool, name, trained=trained, policy=args.policy,
                                               device=run_device(device), seed=args.seed, cache=out / "teachers",
                                               progress=progress_wanted(args), task_one_hot=args.task_one_hot,
                                               batch_size=args.batch_size, learning_rate=args.learning_rate,
                                               learner_options=args.learner_options)
                    seconds[name] = time.perf_counter() - start
        except KeyboardInterrupt:
            announce()
            raise
    rows = compare_scores(values, pool.lengths, keep, label=label, groups=within, seconds=seconds)
    out.mkdir(parents=True, exist_ok=True)
    title = (Path(sources[0]).name if len(sources) == 1 else f"{len(sources)} datasets") + (
        f", points by {args.label}" if label is not None else "")
    panels = {name: column for name, column in values.items() if name != REFERENCE} or values
    figure = plot_compare(out / "compare.png", panels, pool.lengths, label, args.label or "", title)
    report = {"command_line": getattr(args, "command_line", None),
              "source": sources[0] if len(sources) == 1 else sources, "format": fmt.name, "obs_keys": obs_keys,
              "episodes": len(pool), "keep": keep, "per_group": bool(args.per_group), "label": args.label,
              "label_true": None if label is None else int(label.sum()),
              "seed": args.seed, "policy": args.policy, **learner_record(args),
              **({"task_one_hot": True} if args.task_one_hot else {}),
              "trained": {name: score.describe() for name, score in trained.items()},
              "scores": rows}
    (out / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"rank --compare: {counted(len(pool), 'episode')} of {', '.join(sources)} ({fmt.name}); --keep {keep:g}"
          + (" within each group" if within else "")
          + ("" if label is None else f"; label {args.label}: {int(label.sum())} true"))
    for line in table_lines(rows):
        print("  " + line)
    if label is not None:
        print(f"  AUROC: the chance that an episode with {args.label} true scores higher (is dropped sooner) than one "
              "without, ties half; 0.5 is chance, and a label true for good episodes reads below 0.5")
    print("  rho_len: Spearman with episode length; kept_len: the share of the kept episodes that length's cut "
          "keeps too; resid_: the score's ranks less their line in length's ranks (what it knows beyond length)")
    print(f"wrote {out / 'compare.json'}, {figure}")
    return 0
