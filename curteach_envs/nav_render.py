"""Old home of the navigation rendering; kept so that old imports keep working.

Everything lives in :mod:`curteach_envs.navigation.render` now.
"""

from curteach_envs.navigation.render import NAV_LEGEND, nav_ansi, nav_rgb

__all__ = ["nav_ansi", "nav_rgb", "NAV_LEGEND"]
