"""Observation codecs: what a dataset's observations become for the learner, in its demonstrations and its
evaluation environment alike.

* :mod:`~curteach_teaching.datasets.codecs.codec`: :class:`Codec`, the protocol (and ``identity``);
* :mod:`~curteach_teaching.datasets.codecs.registry`: :data:`CODECS` and :func:`codec_for`, the one choice;
* :mod:`~curteach_teaching.datasets.codecs.babyai`, :mod:`~curteach_teaching.datasets.codecs.task_one_hot`,
  :mod:`~curteach_teaching.datasets.codecs.channels_first`: the built-in kinds.

The names below are imported on first use.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_MODULE_OF = {"Codec": "curteach_teaching.datasets.codecs.codec",
              "CODECS": "curteach_teaching.datasets.codecs.registry",
              "codec_for": "curteach_teaching.datasets.codecs.registry"}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))
