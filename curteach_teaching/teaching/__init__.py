"""Teaching (the paper's Algorithm 1): the :func:`~curteach_teaching.teaching.loop.teach` loop and its
:class:`~curteach_teaching.teaching.loop.Learner` protocol with :data:`~curteach_teaching.teaching.loop.LEARNERS`
beside it, the teachers (:mod:`~curteach_teaching.teaching.teachers`) and their factories with
:data:`~curteach_teaching.teaching.factories.TEACHERS` beside them, SCOT (:mod:`~curteach_teaching.teaching.scot`) and
limited observability (:mod:`~curteach_teaching.teaching.observability`).
"""
