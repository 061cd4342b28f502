"""A curriculum plug-in: a preference over demonstrations, in log space.

``preference(learner_difficulty, teacher_difficulty)`` gets ``(N,)`` arrays ``log Psi^L`` and ``log Psi^E`` (larger =
harder) and returns ``(N,)`` preferences (larger = trained on earlier) or ``None`` (keep everything, like Agn).
"""


class TeacherWeighted:
    """Cur with the teacher's difficulty weighted: ``log Psi^L - weight * log Psi^E`` (``weight = 1`` is Cur)."""

    name = "Cur-2T"
    needs_learner = True  # the default; False spares the trainer computing log Psi^L (it then passes None)
    needs_teacher = True

    def __init__(self, weight=2.0):
        self.weight = weight

    def preference(self, learner_difficulty, teacher_difficulty):
        """``(N,)`` the preference of every demonstration."""
        return learner_difficulty - self.weight * teacher_difficulty
