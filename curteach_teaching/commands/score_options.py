"""The flags of the trained scores, offered alike by ``rank`` and ``dataset-bc``: one ``--NAME`` per option a
built-in trained score declares (:func:`~curteach_teaching.datasets.scores.registry.trained_options`; the ensemble's
``--ensemble-size`` and ``--ensemble-batches``), so that neither command names a trained score."""

from __future__ import annotations

__all__ = ["add_score_arguments"]


def add_score_arguments(parser) -> None:
    """Add a flag for every option of the built-in trained scores to ``parser`` (its value under the option's
    name)."""
    from curteach_teaching.datasets.scores.registry import trained_options

    for option in trained_options():
        parser.add_argument("--" + option.name.replace("_", "-"), type=option.type, default=option.default,
                            help=option.help.replace("%", "%%"))
