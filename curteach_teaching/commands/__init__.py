"""Sub-commands of the ``curteach`` CLI (one module each, see :mod:`curteach_teaching.cli`)."""
