"""Dataset formats: one class per storage layout (Minari, robomimic HDF5, LeRobot), one registry of them.

:data:`FORMATS` is a :class:`~curteach_teaching.registry.Registry` of
:class:`~curteach_teaching.datasets.formats.base.DatasetFormat` classes (made without arguments). The built-ins are
listed below; a third-party package adds one with an entry point of the group ``curteach.formats``::

    [project.entry-points."curteach.formats"]
    npz = "mypkg.formats:NpzFormat"

and :func:`~curteach_teaching.datasets.reading.read_pool`, ``curteach rank`` and ``curteach dataset-bc`` then read
(and ``rank`` writes) that format too: no command names a format.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from curteach_teaching.datasets.formats.base import DatasetFormat, Output
from curteach_teaching.registry import PluginError, Registry

__all__ = ["FORMATS", "DatasetFormat", "Output", "field_hint", "format_of", "formats", "load_format"]

#: Dataset formats by name (built-ins below; entry points of ``curteach.formats`` too).
FORMATS = Registry("dataset format", "curteach.formats")


def _builtin(module: str, attr: str) -> Callable[[], type]:
    return lambda: getattr(importlib.import_module(module), attr)  # imported on first use: h5py, pyarrow, minari


# ---- the built-in formats, in the order a source is offered to them (Minari's, the fallback, takes the rest) ----
FORMATS.add("robomimic", _builtin("curteach_teaching.datasets.formats.robomimic", "RobomimicFormat"))
FORMATS.add("lerobot", _builtin("curteach_teaching.datasets.formats.lerobot", "LeRobotFormat"))
FORMATS.add("minari", _builtin("curteach_teaching.datasets.formats.minari", "MinariFormat"))


def load_format(name: str) -> DatasetFormat:
    """The format registered as ``name``, made.

    Raises:
        ValueError: an unknown name, or a module that fails to import. PluginError: a class whose constructor raised,
            or an object that is not a :class:`DatasetFormat`.
    """
    shown, obj = FORMATS.load(name)
    made = FORMATS.call(shown, obj) if isinstance(obj, type) else obj
    if not isinstance(made, DatasetFormat):
        raise PluginError.here(f"dataset format {shown!r} is {type(made).__name__}, not a DatasetFormat (see "
                               "curteach_teaching.datasets.formats.base)")
    return made


def formats() -> list[DatasetFormat]:
    """Every registered format, made: the built-ins in registration order, then the entry points (sorted)."""
    return [load_format(name) for name in FORMATS.names()]


def format_of(source: str | os.PathLike) -> DatasetFormat:
    """The format of ``source``: the first format (in :func:`formats` order) that :meth:`~DatasetFormat.detects` it,
    else the fallback format (Minari's, which reads ids and folders and says what it cannot find)."""
    found = formats()
    for candidate in found:
        if not candidate.fallback and candidate.detects(source):
            return candidate
    return next(candidate for candidate in found if candidate.fallback)


def field_hint(name: str, fields) -> str:
    """The first format's :meth:`~DatasetFormat.field_hint` for a field ``name`` that no episode has (``fields``:
    those it has), ``""`` when no format spells a field so."""
    for candidate in formats():
        hint = candidate.field_hint(name, fields)
        if hint:
            return hint
    return ""
