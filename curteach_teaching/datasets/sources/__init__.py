"""Sources of ``curteach make-dataset``: each a :class:`~curteach_teaching.datasets.sources.base.DatasetSource`.

Minimal on this branch (the Meta-World source only); the registry of every source comes with the branch that makes
``make-dataset`` read them.
"""
