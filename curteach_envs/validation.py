"""Argument checks shared by the whole library; kept for old imports.

``check_int`` now lives in :mod:`curteach_envs._util`, the library's private helper module.
"""

from curteach_envs._util import check_int

__all__ = ["check_int"]
