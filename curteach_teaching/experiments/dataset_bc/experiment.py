"""``curteach dataset-bc``: the paper's learner-centric experiment on any dataset of demonstrations.

One cell per curriculum (Agn, Cur, Cur-L, Cur-T or a plug-in); run ``i`` of every cell starts from the same network
and the same generator of batches (``SeedSequence([seed, i])``). Every run trains imitation's ``BC`` through
:class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` with Algorithm 2's pacing and evaluates the policy
every ``eval_every`` optimizer steps by seeded greedy (and sampled) rollouts on reset seeds that are not in the
dataset (:mod:`~curteach_teaching.experiments.dataset_bc.run`).

**Equal budgets** (default ``budget="equal"``): every epoch takes the same number of optimizer steps,
``ceil(transitions / batch_size)``, whatever its selection
(:class:`~curteach_teaching.curriculum.batches.FixedStepBatches`), so curricula are compared at equal gradient
steps; ``budget="per-epoch"`` is the paper's behaviour, one pass over the epoch's selection (a curriculum's early
epochs then take fewer steps).

**Scales** (:mod:`~curteach_teaching.experiments.dataset_bc.preference`): the task score is the teacher's
``log Psi^E`` (larger = harder); the learner's difficulty is taken per step or summed, and both terms are
standardised over the pool or left raw.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.selection import check_curricula, curriculum_cells
from curteach_teaching.experiments.dataset_bc.preference import LEARNER_TERMS, SCALES
from curteach_teaching.names import AGN, CUR, PAPER_CURRICULA
from curteach_teaching.sweeps.results import RunResult

__all__ = ["BUDGETS", "CURRICULA", "DatasetBCExperiment", "TASK_DIFFICULTIES"]

CURRICULA = PAPER_CURRICULA
#: ``"equal"``: the same optimizer steps in every epoch of every curriculum; ``"per-epoch"``: one pass per epoch
BUDGETS = ("equal", "per-epoch")
#: the built-in task difficulties besides a field name and ``module:attr`` (``level``: the dataset's rank in the list)
TASK_DIFFICULTIES = ("length", "return", "level")


def _finite_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return float(value)


@dataclass(frozen=True)
class DatasetBCExperiment:
    """Settings of one ``dataset-bc`` sweep; :meth:`run_cell` performs one run of one curriculum.

    Args:
        sources: the datasets, in ladder order (ids under ``MINARI_DATASETS_PATH`` or folders; several are one pool
            whose groups are the datasets).
        digest: a digest of the pool's data (:func:`~curteach_teaching.experiments.dataset_bc.run.pool_digest`), so
            that runs on other data are never reused.
        env_id: evaluate in this environment instead of the one recovered from each dataset's spec.
        curricula: the cells (built-in names or plug-in specs).
        task_difficulty: ``length``, ``return``, ``level`` (the dataset's rank in ``sources``), a metadata or info
            field, or ``module:attr`` (:func:`~curteach_teaching.datasets.task_scores`).
        learner_term, scale: see :mod:`~curteach_teaching.experiments.dataset_bc.preference`.
        budget: one of :data:`BUDGETS`.
        max_batches: optimizer steps per run.
        epochs: the pacing schedule's length E (``None``: as many epochs as ``max_batches`` fills).
        batch_size: transitions per optimizer step; learning_rate: Adam's.
        eval_every: evaluate every this many optimizer steps (and before the first).
        eval_episodes: held-out episodes per dataset at each evaluation; sampled: also evaluate sampled actions.
        pacing_a, pacing_b: :class:`~curteach_teaching.curriculum.selection.LinearPacing`'s.
        policy: ``auto`` or a kind of :mod:`~curteach_teaching.experiments.dataset_bc.policies`, or ``module:attr``.
        progress: show a bar per run (not a setting).
    """

    sources: tuple
    digest: str
    env_id: str | None = None
    curricula: tuple = (AGN, CUR)
    task_difficulty: str = "length"
    learner_term: str = "per-step"
    scale: str = "standard"
    budget: str = "equal"
    max_batches: int = 1000
    epochs: int | None = None
    batch_size: int = 64
    learning_rate: float = 1e-3
    eval_every: int = 250
    eval_episodes: int = 20
    sampled: bool = True
    pacing_a: float = 0.8
    pacing_b: float = 0.5
    policy: str = "auto"
    progress: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        sources = tuple(self.sources)
        if not sources or not all(isinstance(s, str) and s for s in sources):
            raise ValueError(f"dataset must name at least one dataset; got {list(sources)}")
        object.__setattr__(self, "sources", sources)
        object.__setattr__(self, "curricula", check_curricula(self.curricula, CURRICULA))
        if self.learner_term not in LEARNER_TERMS:
            raise ValueError(f"learner_term must be one of {LEARNER_TERMS}; got {self.learner_term!r}")
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}; got {self.scale!r}")
        if self.budget not in BUDGETS:
            raise ValueError(f"budget must be one of {BUDGETS}; got {self.budget!r}")
        if not isinstance(self.task_difficulty, str) or not self.task_difficulty:
            raise ValueError(f"task_difficulty must name a score; got {self.task_difficulty!r}")
        for name in ("max_batches", "batch_size", "eval_every", "eval_episodes"):
            check_int(name, getattr(self, name), 1)
        if self.epochs is not None:
            check_int("epochs", self.epochs, 1)
        _finite_positive("learning_rate", self.learning_rate)
        _finite_positive("pacing_a", self.pacing_a)
        b = self.pacing_b
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not 0 <= b <= 1:
            raise ValueError(f"pacing_b must be in [0, 1]; got {self.pacing_b!r}")

    @property
    def cells(self) -> tuple:
        """One cell per curriculum, named as it (a plug-in by its ``name``)."""
        return tuple(self.curriculum_names())

    def curriculum_names(self) -> dict:
        """``cell name -> curriculum spec``."""
        return curriculum_cells(self.curricula)

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files)."""
        data = asdict(self)
        data.pop("progress")
        data["sources"] = list(self.sources)
        data["curricula"] = list(self.curricula)
        data["experiment"] = "dataset-bc"
        return data

    def schedule(self, n_transitions: int) -> tuple[int | None, int]:
        """``(steps per epoch or None, epochs)`` for a pool of ``n_transitions``: the equal budget's
        ``ceil(n / batch_size)`` steps per epoch (``None`` for ``per-epoch``) and E (given, or enough epochs of
        that size to fill ``max_batches``)."""
        per_epoch = math.ceil(n_transitions / self.batch_size)
        epochs = self.epochs if self.epochs is not None else max(1, math.ceil(self.max_batches / per_epoch))
        return (per_epoch if self.budget == "equal" else None), epochs

    def check(self, pool) -> None:
        """Everything about the pool a run needs, before anything is written: the task score (a missing field or a
        NaN names the episode), the observation codec and a policy for the spaces, a plug-in curriculum.

        Raises:
            ValueError: one line naming the problem.
        """
        from curteach_teaching.experiments.dataset_bc.observations import codec_for
        from curteach_teaching.experiments.dataset_bc.policies import make_policy
        from curteach_teaching.experiments.dataset_bc.run import task_difficulty_scores

        if self.task_difficulty == "level" and len(pool.group_names) < 2:
            raise ValueError("task difficulty 'level' ranks the datasets of a ladder: give at least two")
        if any(spec != AGN for spec in self.curricula):
            scores = task_difficulty_scores(pool, self.task_difficulty)
            if not np.isfinite(scores).all():
                raise ValueError(f"task difficulty {self.task_difficulty!r} is not finite for every episode")
        codec = codec_for(pool.observation_space)
        make_policy(self.policy, codec.observation_space, pool.action_space, 0)

    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of curriculum ``cell`` (:func:`~curteach_teaching.experiments.dataset_bc.run.run_once`)."""
        if cell not in self.cells:
            raise ValueError(f"cell must be one of {list(self.cells)}; got {cell!r}")
        from curteach_teaching.experiments.dataset_bc.run import run_once

        with warnings.catch_warnings():
            # imitation's BC logger calls float() on tensors that require grad (harmless)
            warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
            # imitation's BC unwraps every batch of Dict observations, plain dicts included (harmless)
            warnings.filterwarnings("ignore", message="trying to unwrap object of type")
            return run_once(self, cell, index, seed_sequence)
