"""Dataset sources: the generators ``curteach make-dataset SOURCE`` runs, one registry of them.

:data:`SOURCES` is a :class:`~curteach_teaching.registry.Registry` of
:class:`~curteach_teaching.datasets.sources.base.DatasetSource` objects (an instance, or a class made without
arguments). The built-ins are listed below; a third-party package adds one with an entry point of the group
``curteach.dataset_sources``::

    [project.entry-points."curteach.dataset_sources"]
    mysource = "mypkg.sources:MySource"

and ``curteach make-dataset mysource ...`` then runs it, with its own flags.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from curteach_teaching.datasets.sources.base import DatasetSource
from curteach_teaching.registry import PluginError, Registry

__all__ = ["SOURCES", "DatasetSource", "load_source", "sources"]

#: Dataset sources by name (built-ins below; entry points of ``curteach.dataset_sources`` too).
SOURCES = Registry("dataset source", "curteach.dataset_sources")


def _builtin(module: str, attr: str) -> Callable[[], Any]:
    return lambda: getattr(importlib.import_module(module), attr)  # imported on first use: --help stays fast


# ---- the built-in sources, in the order make-dataset --help lists them ----
SOURCES.add("shortest-path", _builtin("curteach_teaching.datasets.sources.navigation", "ShortestPathSource"))
SOURCES.add("tsp", _builtin("curteach_teaching.datasets.sources.navigation", "TSPSource"))
SOURCES.add("babyai", _builtin("curteach_teaching.datasets.sources.babyai", "BabyAISource"))
SOURCES.add("metaworld", _builtin("curteach_teaching.datasets.sources.metaworld", "MetaWorldSource"))
# (further built-in sources are added here, one line each)


def load_source(spec: str) -> DatasetSource:
    """The source ``spec`` names (a built-in, an entry point or ``module:attr``), made when it is a class.

    Raises:
        ValueError: an unknown source (listing the available ones), or one whose module fails to import (a missing
            optional dependency, named). PluginError: a class whose constructor raised, or an object that is not a
            source (no ``add_arguments``, ``check`` and ``generate``).
    """
    try:
        name, obj = SOURCES.load(spec)
    except ValueError:
        raise
    except Exception as error:  # a built-in's module may need an optional package (minigrid, metaworld, ...)
        raise ValueError(f"dataset source {spec!r} failed to load ({type(error).__name__}: {error})") from error
    if isinstance(obj, type):
        obj = SOURCES.call(name, obj)
    if not all(callable(getattr(obj, method, None)) for method in ("add_arguments", "check", "generate")):
        raise PluginError.here(f"dataset source {name!r} is {type(obj).__name__}, not a dataset source (it needs "
                               "add_arguments, check and generate; see curteach_teaching.datasets.sources.base)")
    return obj


def sources() -> list[tuple[str, DatasetSource | None, str]]:
    """``(name, source or None, error)`` of every registered source, built-ins first: a plug-in that fails to load
    is listed with its error instead of breaking ``make-dataset --help``."""
    found = []
    for name in SOURCES.names():
        try:
            found.append((name, load_source(name), ""))
        except ValueError as error:  # PluginError is one
            found.append((name, None, str(error)))
    return found
