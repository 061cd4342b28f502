"""Atomic file writes; kept for old imports.

``atomic_write`` now lives in :mod:`curteach_envs._util`, the library's private helper module.
"""

from curteach_envs._util import atomic_write

__all__ = ["atomic_write"]
