"""Lazy package exports (PEP 562), shared by the packages of the teaching layer; private.

A package lists ``name -> module`` and imports the module on first use of the name, so that importing the package
(or one light submodule) does not import torch and imitation. This module imports nothing of the project, so that a
package and the subpackages that use it form no import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_getattr(package: str, module_of: dict, namespace: dict) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``name`` from ``module_of[name]`` on first use and caches it in the
    package's ``namespace``.

    Args:
        package: the package's name (for the error message).
        module_of: public name -> the dotted name of the module that defines it.
        namespace: the package's ``globals()``.
    """

    def __getattr__(name: str):
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
