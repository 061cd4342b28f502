"""The learner flags of the commands that train SB3 policies by behavioural cloning on a dataset: ``--policy``,
``--batch-size`` and ``--learning-rate`` (``dataset-bc``'s runs and its ensemble teacher, ``rank``'s ensemble), so
that the two commands take them alike and ``rank --score ensemble`` scores as ``dataset-bc --task-difficulty
ensemble`` does."""

from __future__ import annotations

__all__ = ["add_learner_arguments"]

# curteach_teaching.learners.factory.POLICY_KINDS (tests/commands/test_learner_options.py checks they agree), written
# out so that building the parser imports no learner
_POLICY_KINDS = ("auto", "babyai-film", "mlp", "mlp-256", "cnn", "multi-input")


def add_learner_arguments(parser, *, whose: str) -> None:
    """Add ``--policy``, ``--batch-size`` and ``--learning-rate`` to ``parser``; ``whose`` starts the policy's help
    (e.g. ``"the ensemble's policy"``)."""
    kinds = ", ".join("mlp-256 (two layers of 256)" if kind == "mlp-256" else kind for kind in _POLICY_KINDS)
    parser.add_argument("--policy", default="auto",
                        help=f"{whose}: {kinds} or module:attr (auto: a CNN for images, a combined extractor for "
                        "Dict observations, BabyAI's FiLM network for its missions, else an MLP, Gaussian for "
                        "continuous actions; default auto)")
    parser.add_argument("--batch-size", type=int, default=64, help="transitions per step (default 64)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's rate (default 0.001)")
