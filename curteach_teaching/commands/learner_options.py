"""The learner flags of the commands that train SB3 policies by behavioural cloning on a dataset: ``--policy``,
``--batch-size`` and ``--learning-rate`` (``dataset-bc``'s runs and its ensemble teacher, ``rank``'s ensemble), so
that the two commands take them alike and ``rank --score ensemble`` scores as ``dataset-bc --task-difficulty
ensemble`` does."""

from __future__ import annotations

from curteach_teaching.learners.policy_kinds import POLICY_KINDS

__all__ = ["add_learner_arguments"]


def add_learner_arguments(parser, *, whose: str) -> None:
    """Add ``--policy``, ``--batch-size`` and ``--learning-rate`` to ``parser``; ``whose`` starts the policy's help
    (e.g. ``"the ensemble's policy"``)."""
    kinds = ", ".join("mlp-256 (two layers of 256)" if kind == "mlp-256" else kind for kind in POLICY_KINDS)
    parser.add_argument("--policy", default="auto",
                        help=f"{whose}: {kinds}, a registered dataset learner or module:attr (a dataset learner "
                        "kind or an SB3 policy factory; auto: a CNN for images, a combined extractor for Dict "
                        "observations, BabyAI's FiLM network for its missions, else an MLP, Gaussian for continuous "
                        "actions; default auto)")
    parser.add_argument("--batch-size", type=int, default=64, help="transitions per step (default 64)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's rate (default 0.001)")
