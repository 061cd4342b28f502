"""Plug-ins by name: the generic :class:`Registry`. Each kind's registry lives beside its protocol:
:data:`~curteach_teaching.teaching.factories.TEACHERS`, :data:`~curteach_teaching.teaching.loop.LEARNERS`,
:data:`~curteach_teaching.curriculum.selection.CURRICULA`,
:data:`~curteach_teaching.experiments.car.recipes.CAR_TRAINERS`,
:data:`~curteach_teaching.datasets.scores.registry.TASK_SCORES` and :data:`~curteach_teaching.datasets.sources.SOURCES`.

A name given on the command line or to an experiment is looked up in this order:

1. ``module:attr`` (``mypkg.teachers:Greedy``, ``mypkg.prefs:Mine``): imported on the spot, as Gymnasium's
   ``module:EnvId`` form;
2. a built-in (registered by this package with :meth:`Registry.add` or the :meth:`Registry.register` decorator);
3. an entry point of the kind's group (``curteach.teachers``, ``curteach.curricula``, ``curteach.learners``,
   ``curteach.car_trainers``), declared by a third-party package in its ``pyproject.toml``::

       [project.entry-points."curteach.teachers"]
       Greedy = "mypkg.teachers:Greedy"

The registry hands back the object it found (a factory, a class or a preference); what a kind's objects must look
like is that kind's protocol (:mod:`curteach_teaching.teaching.loop` for teachers and learners, the curriculum core for
curricula, the trainer adapters for trainers, :mod:`~curteach_teaching.experiments.car.recipes` for car
trainers). :meth:`Registry.call` calls a factory and names it in the error when it
raises or returns the wrong type, so a broken plug-in is never mistaken for a bug of the library.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

__all__ = ["PluginError", "Registry", "display_name"]


class PluginError(ValueError):
    """A plug-in (a user's teacher, learner, curriculum, ...) raised while the library called it: the message names
    the plug-in, the call and the exception in one line; :attr:`details` keeps the plug-in's traceback (a sweep
    writes it to ``errors.log`` in its output folder).

    Args:
        message: the one line.
        details: the formatted traceback of the plug-in's exception.
    """

    def __init__(self, message: str, details: str = ""):
        super().__init__(message, details)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message

    @classmethod
    def here(cls, message: str) -> PluginError:
        """The error for what a plug-in *returned* (no exception of its own to show): its details are where the
        library found it, the call stack up to here."""
        return cls(message, "Found here, by the library's check of what the plug-in returned:\n"
                   + "".join(traceback.format_stack()[:-1]))


def display_name(obj: Any, fallback: str) -> str:
    """The name a plug-in appears under in summaries and figures: its ``name`` attribute when it is a non-empty
    string, else ``fallback`` (the attribute's or entry point's name)."""
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) and name else fallback


@dataclass
class Registry:
    """The plug-ins of one kind.

    Args:
        kind: what the plug-ins are, singular (``"teacher"``), for messages.
        group: the entry-point group third-party packages declare them in (``"curteach.teachers"``).
    """

    kind: str
    group: str
    _builtins: dict[str, Callable[[], Any]] = field(default_factory=dict, repr=False)

    def add(self, name: str, loader: Callable[[], Any]) -> None:
        """Register a built-in ``name`` whose object ``loader()`` returns (called on first use, so that a name can
        be listed without importing torch).

        Raises:
            ValueError: ``name`` is empty, contains ``:`` or ``,``, or is registered already.
        """
        if not isinstance(name, str) or not name or ":" in name or "," in name:
            raise ValueError(f"a {self.kind} name must be a non-empty string without ':' or ','; got {name!r}")
        if name in self._builtins:
            raise ValueError(f"{self.kind} {name!r} is registered already")
        self._builtins[name] = loader

    def register(self, name: str) -> Callable[[Any], Any]:
        """Decorator form of :meth:`add` for an object defined in place: ``@TEACHERS.register("Mine")``."""

        def decorate(obj: Any) -> Any:
            self.add(name, lambda: obj)
            return obj

        return decorate

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        found: dict[str, metadata.EntryPoint] = {}
        for entry in metadata.entry_points(group=self.group):
            found.setdefault(entry.name, entry)  # the first distribution on sys.path wins, as importlib's lookup does
        return found

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` is a built-in of this registry (not ``module:attr``, not an entry point)."""
        return name in self._builtins

    def names(self) -> tuple[str, ...]:
        """The built-in names in registration order, then the entry points' names (sorted) not shadowing one."""
        extra = sorted(name for name in self._entry_points() if name not in self._builtins)
        return (*self._builtins, *extra)

    def _unknown(self, spec: str) -> ValueError:
        import difflib

        names = self.names()
        # a slip of case (Cur-t) or of one letter (lenght) is the usual cause: name the likely one first
        close = [n for n in names if n.lower() == spec.lower()] or difflib.get_close_matches(spec, names, n=1,
                                                                                            cutoff=0.75)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return ValueError(
            f"unknown {self.kind} {spec!r}{hint}; available: {', '.join(names) or '(none)'}. To add one, pass "
            f"'module:attr' (e.g. mypkg.module:Mine) or declare an entry point in the group {self.group!r}"
        )

    def load(self, spec: str) -> tuple[str, Any]:
        """The plug-in ``spec`` names, with the name it is shown under.

        Returns:
            ``(name, obj)``: ``name`` is :func:`display_name` of the object (its ``name`` attribute, else the
            registered name, or the attribute's name for ``module:attr``).

        Raises:
            ValueError: an unknown name (the message lists the available names and how to register one), a
                ``module:attr`` whose module cannot be imported or lacks the attribute, or an entry point that
                fails to load (named, with the error).
        """
        if not isinstance(spec, str) or not spec.strip():
            raise self._unknown(str(spec))
        spec = spec.strip()
        if ":" in spec:
            module_name, _, attr = spec.partition(":")
            if not module_name or not attr:
                raise ValueError(f"{self.kind} {spec!r}: 'module:attr' needs both parts")
            try:
                module = importlib.import_module(module_name)
            except Exception as error:  # a plug-in's import error is the plug-in's, whatever its type
                raise ValueError(f"{self.kind} {spec!r}: cannot import {module_name!r} "
                                 f"({type(error).__name__}: {error})") from error
            obj: Any = module
            for part in attr.split("."):
                if not hasattr(obj, part):
                    raise ValueError(f"{self.kind} {spec!r}: module {module_name!r} has no attribute {attr!r}")
                obj = getattr(obj, part)
            return display_name(obj, attr.rsplit(".", 1)[-1]), obj
        if spec in self._builtins:
            return spec, self._builtins[spec]()  # a built-in is shown under the name it is registered by
        entry = self._entry_points().get(spec)
        if entry is None:
            raise self._unknown(spec)
        try:
            obj = entry.load()
        except Exception as error:
            raise ValueError(f"{self.kind} {spec!r} (entry point {entry.value!r} in {self.group!r}) failed to load "
                             f"({type(error).__name__}: {error})") from error
        return display_name(obj, spec), obj

    def load_many(self, specs: str | Iterable[str]) -> list[tuple[str, Any]]:
        """:meth:`load` for each of a comma-separated string or an iterable of specs, in order.

        Raises:
            ValueError: no spec, an unknown one, or two plug-ins shown under the same name.
        """
        items = [s.strip() for s in (specs.split(",") if isinstance(specs, str) else specs) if s and s.strip()]
        if not items:
            raise ValueError(f"no {self.kind} given; available: {', '.join(self.names())}")
        loaded = [self.load(item) for item in items]
        names = [name for name, _ in loaded]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"{self.kind}s must have distinct names; {', '.join(repeated)} appear(s) twice")
        return loaded

    def call(self, name: str, factory: Any, *args: Any, expect: type | tuple[type, ...] | Callable[[Any], bool]
             | None = None, **kwargs: Any) -> Any:
        """``factory(*args, **kwargs)``, with errors that name the plug-in.

        Args:
            name: the plug-in's name (for messages).
            expect: a type (or tuple of types) the result must be an instance of, or a predicate on it.

        Raises:
            ValueError: the factory is not callable.
            PluginError: the factory raised (chained; its traceback kept for the log) or returned something
                ``expect`` refuses.
        """
        if not callable(factory):
            raise ValueError(f"{self.kind} {name!r} is not callable (got {type(factory).__name__})")
        try:
            result = factory(*args, **kwargs)
        except Exception as error:
            raise PluginError(f"{self.kind} factory {name!r} raised {type(error).__name__}: {error}",
                              traceback.format_exc()) from error
        if expect is not None:
            ok = isinstance(result, expect) if isinstance(expect, (type, tuple)) else bool(expect(result))
            if not ok:
                raise PluginError.here(f"{self.kind} factory {name!r} returned {type(result).__name__}, which is "
                                       f"not a {self.kind} (see the {self.kind} protocol)")
        return result
