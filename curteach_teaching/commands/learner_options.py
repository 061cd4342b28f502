"""The learner flags of the commands that train policies on a dataset: ``--policy``, ``--batch-size``,
``--learning-rate`` and the built-in learners' hyper-parameters (``--diffusion-timesteps``, ``--rnn-window``, ...;
:mod:`~curteach_teaching.learners.hyperparameters`), for ``dataset-bc``'s runs and its trained scores and ``rank``'s,
so that the two commands take them alike and ``rank --score ensemble`` scores as ``dataset-bc --task-difficulty
ensemble`` does."""

from __future__ import annotations

from curteach_teaching.learners.hyperparameters import DEFAULT_LEARNING_RATE, HYPERPARAMETERS
from curteach_teaching.learners.policy_kinds import POLICY_KINDS

__all__ = ["add_learner_arguments", "learner_record", "resolve_learner_arguments"]


def add_learner_arguments(parser, *, whose: str) -> None:
    """Add ``--policy``, ``--batch-size``, ``--learning-rate`` and the learners' hyper-parameters to ``parser``;
    ``whose`` starts the policy's help (e.g. ``"the ensemble's policy"``). The hyper-parameters and
    ``--learning-rate`` default to ``None`` (not given): :func:`resolve_learner_arguments` fills them in."""
    kinds = ", ".join("mlp-256 (two layers of 256)" if kind == "mlp-256" else kind for kind in POLICY_KINDS)
    parser.add_argument("--policy", default="auto",
                        help=f"{whose}: {kinds}, diffusion, bc-rnn, a registered dataset learner or module:attr (a "
                        "dataset learner kind or an SB3 policy factory; auto: a CNN for images, a combined extractor "
                        "for Dict observations, BabyAI's FiLM network for its missions, else an MLP, Gaussian for "
                        "continuous actions; default auto)")
    parser.add_argument("--batch-size", type=int, default=64, help="transitions per step (default 64)")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help=f"Adam's rate (default: the learner's own, {DEFAULT_LEARNING_RATE:g} but for --policy "
                        "diffusion's 0.003)")
    for option in HYPERPARAMETERS:
        kind = str if option.choices is not None else int
        parser.add_argument(option.flag, type=kind, default=None, choices=option.choices,
                            help=f"{option.help} (default {option.default})")


def resolve_learner_arguments(args) -> None:
    """Check the learner flags of ``args`` against ``--policy`` and fill them in, before any reading or training:
    ``args.learner_options`` the hyper-parameters given away from their defaults (sorted pairs; ``()`` by default),
    ``args.learning_rate`` the learner kind's own where not given.

    Raises:
        ValueError: one line: an unknown ``--policy``, a hyper-parameter of another policy, a value out of range.
    """
    from curteach_teaching.learners.dataset_learner import learner_kind
    from curteach_teaching.learners.hyperparameters import default_learning_rate, learner_options

    name, kind = learner_kind(args.policy)
    args.learner_options = learner_options(name, {option.name: getattr(args, option.name, None)
                                                  for option in HYPERPARAMETERS})
    if args.learning_rate is None:
        args.learning_rate = default_learning_rate(kind)


def learner_record(args) -> dict:
    """What ``rank.json`` and ``compare.json`` record of the hyper-parameters beside ``policy``: nothing where none
    is away from its default (the files as before), else ``{"learner_options": {name: value}}``."""
    options = getattr(args, "learner_options", ())
    return {"learner_options": dict(options)} if options else {}
