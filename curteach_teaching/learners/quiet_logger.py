"""A silent imitation logger, for every trainer the library drives (BC for the car's learner, the curriculum
adapters, the navigation runs)."""

from __future__ import annotations

from imitation.util import logger as imit_logger
from stable_baselines3.common import logger as sb_logger

__all__ = ["silent_logger"]


def silent_logger() -> imit_logger.HierarchicalLogger:
    """An imitation logger with no output: pass it as ``BC(custom_logger=...)`` to stop BC printing a table at the
    first batch of every ``train`` call (which the curriculum makes once per epoch). Writes no files."""
    return imit_logger.HierarchicalLogger(sb_logger.Logger(folder=None, output_formats=[]), format_strs=[])
