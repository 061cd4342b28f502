"""One curriculum adapter per imitation trainer: :mod:`~curteach_teaching.curriculum.adapters.bc`,
:mod:`~curteach_teaching.curriculum.adapters.dagger`, :mod:`~curteach_teaching.curriculum.adapters.adversarial` (GAIL
and AIRL) and :mod:`~curteach_teaching.curriculum.adapters.mce_irl`. Each decides which demonstrations its trainer sees
and never copies the trainer's loop; every use of imitation's private API is in
:mod:`~curteach_teaching.curriculum.adapters._imitation_compat`.
"""
