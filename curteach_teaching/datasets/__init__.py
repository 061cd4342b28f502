"""Demonstration datasets: Minari in and out, the episode pool, and task scores per demonstration.

* :mod:`~curteach_teaching.datasets.pool`: :class:`EpisodePool`, imitation ``Trajectory``s with each episode's id,
  seed, task group, metadata and infos, the spaces and the environment specs;
* :mod:`~curteach_teaching.datasets.reading`: :func:`read_pool`, local datasets of any registered format, never
  downloading;
* :mod:`~curteach_teaching.datasets.formats`: :data:`FORMATS`, one class per format (Minari, robomimic's HDF5,
  LeRobot's parquet layout) that detects, reads and checks a source and writes a kept subset in its own terms;
* :mod:`~curteach_teaching.datasets.writing`: :func:`write_pool`, a pool as a Minari dataset in any storage format;
* :mod:`~curteach_teaching.datasets.scores`: the one score registry, :data:`TASK_SCORES` and
  :func:`task_difficulty` (``length``, ``return``, ``level``, a field or a function, the trained ``ensemble``);
* :mod:`~curteach_teaching.datasets.codecs`: the observation codecs (what the learner sees);
* :mod:`~curteach_teaching.datasets.prepare`: the one prepare step of ``rank`` and ``dataset-bc`` (read, check,
  encode, digest, fit the trained scores once, cache), giving :class:`PreparedData`;
* :mod:`~curteach_teaching.datasets.sources`: :data:`SOURCES`, the generators ``curteach make-dataset`` runs;
* :mod:`~curteach_teaching.datasets.spaces`: the supported spaces and the value conversions;
* :mod:`~curteach_teaching.datasets.navigation`, :mod:`~curteach_teaching.datasets.car`: our own demonstrations as
  pools.

The names below are imported on first use (imitation imports torch). See docs/datasets.md.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.datasets.pool": ("EpisodePool",),
    "curteach_teaching.datasets.reading": ("read_pool", "source_format"),
    "curteach_teaching.datasets.formats": ("FORMATS", "DatasetFormat", "format_of"),
    "curteach_teaching.datasets.formats.minari_read": ("datasets_root", "find_datasets"),
    "curteach_teaching.datasets.formats.robomimic_read": ("read_robomimic",),
    "curteach_teaching.datasets.formats.lerobot_read": ("episode_indices_note", "read_lerobot"),
    "curteach_teaching.datasets.writing": ("DATA_FORMATS", "write_pool"),
    "curteach_teaching.datasets.scores.registry": ("TASK_SCORES", "TaskScore", "describe_task_scores", "is_trained",
                                                   "score_names", "score_terms", "task_difficulty"),
    "curteach_teaching.datasets.prepared": ("PreparedData", "pool_digest", "success_defined"),
    "curteach_teaching.datasets.prepare": ("fit_scores", "prepare"),
    "curteach_teaching.datasets.navigation": ("navigation_dataset_id", "navigation_pool", "write_navigation_dataset"),
    "curteach_teaching.datasets.car": ("car_episode_pool",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))
