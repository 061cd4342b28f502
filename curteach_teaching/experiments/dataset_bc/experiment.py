"""``curteach dataset-bc``: the paper's learner-centric experiment on any dataset of demonstrations.

One cell per curriculum (Agn, Cur, Cur-L, Cur-T or a plug-in); run ``i`` of every cell starts from the same network
and the same generator of batches (``SeedSequence([seed, i])``). Every run trains imitation's ``BC`` through
:class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` with Algorithm 2's pacing and evaluates the policy
every ``eval_every`` optimizer steps by seeded greedy (and sampled) rollouts on reset seeds that are not in the
dataset (:mod:`~curteach_teaching.experiments.dataset_bc.run`).

**The driver prepares, workers compute**: :meth:`DatasetBCExperiment.prepare` reads nothing from disk; given the
pool (read once by the caller) it checks every setting against it and calls the prepare step ``rank`` calls too
(:func:`~curteach_teaching.datasets.prepare.prepare`: the observation codec, the encoded trajectories, every task
score the cells read, once); :meth:`DatasetBCExperiment.fit` fits the trained task scores once, in the driver, and
caches them (:func:`~curteach_teaching.datasets.prepare.fit_scores`). The prepared data
(:class:`~curteach_teaching.datasets.prepared.PreparedData`) travels with the experiment to the workers,
which neither read datasets nor write files. The settings name the data by its digest, not by where it is stored.

**Equal budgets** (default ``budget="equal"``): every epoch takes the same number of optimizer steps,
``ceil(transitions / batch_size)``, whatever its selection
(:class:`~curteach_teaching.curriculum.batches.FixedStepBatches`), so curricula are compared at equal gradient
steps; ``budget="per-epoch"`` is the paper's behaviour, one pass over the epoch's selection (a curriculum's early
epochs then take fewer steps).

**Scales** (:mod:`~curteach_teaching.curriculum.scaled`): the task score is the teacher's
``log Psi^E`` (larger = harder); the learner's difficulty is taken per step or summed, and both terms are
standardised over the pool or left raw.

**Uses** (:mod:`~curteach_teaching.curriculum.uses`): each cell orders (Algorithm 2), selects the ``keep`` most
preferred or weights every demonstration by its preference; cells are written ``CURRICULUM[@USE][/TASK]``
(:mod:`~curteach_teaching.experiments.dataset_bc.cells`). **Task scores**: the registry
:data:`~curteach_teaching.datasets.scores.registry.TASK_SCORES` decides what a name means and which are trained
(``ensemble``, or a user's ``module:attr``), fitted by :meth:`DatasetBCExperiment.fit` once per data and
``teacher_seed``; the experiment names none.

**Without an environment** (``holdout``; every robomimic file and LeRobot dataset): a seeded share of each group's
episodes is held out, never trained on nor scored by a teacher, and every evaluation scores the policy on their
demonstrated actions instead of rollouts (:mod:`~curteach_teaching.experiments.dataset_bc.held_out`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.curriculum.selection import check_variant, variant_name
from curteach_teaching.curriculum.uses import USES, Order, Select, Weight
from curteach_teaching.datasets.scores.registry import trained_score, trained_terms
from curteach_teaching.experiments.dataset_bc.cells import CellSpec, parse_cell
from curteach_teaching.experiments.dataset_bc.settings_checks import BUDGETS, check_settings
from curteach_teaching.names import AGN, CUR, PAPER_CURRICULA
from curteach_teaching.sweeps.fingerprints import (
    NEVER,
    WHEN_NOT_DEFAULT,
    cell_fields,
    setting,
    setting_names,
    shared_settings,
)
from curteach_teaching.sweeps.results import RunResult

__all__ = ["BUDGETS", "CURRICULA", "DatasetBCExperiment"]

CURRICULA = PAPER_CURRICULA


@dataclass(frozen=True)
class DatasetBCExperiment:
    """Settings of one ``dataset-bc`` sweep; :meth:`prepare` (and :meth:`fit`) give it the data, :meth:`run_cell`
    performs one run of one curriculum.

    Args:
        digest: a digest of the pool's data (:func:`~curteach_teaching.datasets.prepared.pool_digest`), so
            that runs on other data are never reused (``""``: :meth:`prepare` fills it in).
        env_id: evaluate in this environment instead of the one recovered from each dataset's spec.
        curricula: the cells (built-in names or plug-in specs).
        task_difficulty: a name of :data:`~curteach_teaching.datasets.scores.registry.TASK_SCORES` (``length``,
            ``return``, ``level``, ``ensemble``), a metadata or info field, or ``module:attr``, plain or trained
            (:func:`~curteach_teaching.datasets.scores.registry.task_difficulty`).
        learner_term, scale: see :mod:`~curteach_teaching.curriculum.scaled`.
        budget: one of :data:`BUDGETS`.
        max_batches: optimizer steps per run.
        epochs: the pacing schedule's length E (``None``: as many epochs as ``max_batches`` fills).
        batch_size: transitions per optimizer step; learning_rate: Adam's.
        eval_every: evaluate every this many optimizer steps (and before the first).
        eval_episodes: held-out episodes per dataset at each evaluation; sampled: also evaluate sampled actions.
        pacing_a, pacing_b: :class:`~curteach_teaching.curriculum.pacing.LinearPacing`'s.
        policy: ``auto`` or a kind of :mod:`~curteach_teaching.learners.factory`, or ``module:attr``.
        use: the use of cells that name none (one of :data:`~curteach_teaching.curriculum.uses.USES`).
        keep: the fraction ``select`` keeps, in ``(0, 1]``; temperature: ``weight``'s (> 0).
        keep_within: ``"pool"``: select's cut is one over the pool; ``"group"``: within each group (each dataset or
            task keeps its share, :class:`~curteach_teaching.curriculum.uses.Select`'s ``groups``).
        learner_options: the learner kind's hyper-parameters away from their defaults, sorted ``(name, value)``
            pairs (:func:`~curteach_teaching.learners.hyperparameters.learner_options`; ``()``: the kind's defaults).
        task_one_hot: the learner sees a one-hot over the pool's groups (each a task) appended to flat observations
            (:mod:`~curteach_teaching.datasets.codecs.task_one_hot`); Meta-World's pools of two tasks or more get
            theirs whatever this says.
        ensemble_size, ensemble_batches: the ensemble teacher's members and optimizer steps per member (``None``:
            ``max_batches``); it trains with ``batch_size`` and ``learning_rate``.
        deminf_k, deminf_encoder, deminf_state_latent, deminf_action_latent, deminf_vae_steps: ``deminf``'s
            (:mod:`~curteach_teaching.datasets.scores.deminf`); policy_steps, action_samples, likelihood_bandwidth:
            those of ``policy-loss``, ``action-likelihood`` and ``action-variance``
            (:mod:`~curteach_teaching.datasets.scores.fitted_policy`; ``policy_steps`` ``None``: ``max_batches``);
            demo_score_steps, demo_score_checkpoints, demo_score_rollouts, demo_score_epochs, demo_score_hidden,
            demo_score_actions: ``demo-score``'s (:mod:`~curteach_teaching.datasets.scores.demo_score`; steps
            ``None``: ``max_batches``).
            cupid_rollouts, cupid_projection_dim, cupid_damping, cupid_weights: ``cupid``'s
            (:mod:`~curteach_teaching.datasets.scores.cupid`).
        teacher_seed: the sweep's seed: the ensemble's, and the held-out split's.
        holdout: ``None``: evaluate by rollouts in the environment; else there is none, and this share of each
            group's episodes is held out and scored (:mod:`~curteach_teaching.experiments.dataset_bc.held_out`), in
            ``(0, 1)``.
        holdout_field: hold out only episodes whose boolean metadata field this is true (a trusted subset, e.g.
            robomimic's ``better``); ``None``: any episode.
        obs_keys: the observation keys the pool was read with (a robomimic file's or a LeRobot dataset's); ``None``:
            the reader's default.
        progress: show a bar per run (not a setting).
        data: the prepared data (not a setting; :meth:`prepare` sets it).
        device: ``"cpu"`` or ``"cuda"``, where the runs and the ensemble teacher train (not a setting: the runner's,
            :mod:`~curteach_teaching.sweeps.devices`; a run in worker ``k`` of a process pool takes GPU ``k - 1``
            modulo the GPUs).
    """

    # which settings enter the runs' fingerprint, and when (curteach_teaching.sweeps.fingerprints): those added
    # after the first sweeps, with a default that reproduces them, only away from it (so the folders saved before
    # resume); those only some cells read (cell=True) in those cells' settings alone (cell_settings)
    digest: str = ""
    env_id: str | None = None
    curricula: tuple = setting((AGN, CUR), cell=True)
    task_difficulty: str = setting("length", cell=True)
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
    use: str = setting("order", cell=True)
    keep: float = setting(0.6, cell=True)
    temperature: float = setting(1.0, cell=True)
    ensemble_size: int = setting(5, cell=True)
    ensemble_batches: int | None = setting(None, cell=True)
    ensemble_fit: str = setting("sequential", fingerprint=WHEN_NOT_DEFAULT, cell=True)
    # the options of the scores added after the first sweeps (deminf, CUPID's baselines): read by their cells alone
    deminf_k: int = setting(5, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    deminf_encoder: str = setting("pca", fingerprint=WHEN_NOT_DEFAULT, cell=True)
    deminf_state_latent: int = setting(8, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    deminf_action_latent: int = setting(3, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    deminf_vae_steps: int = setting(2000, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    policy_steps: int | None = setting(None, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    action_samples: int = setting(16, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    likelihood_bandwidth: float = setting(1.0, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    demo_score_steps: int | None = setting(None, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    demo_score_checkpoints: int = setting(3, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    demo_score_rollouts: int = setting(10, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    demo_score_epochs: int = setting(50, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    demo_score_hidden: int = setting(32, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    demo_score_actions: str = setting("greedy", fingerprint=WHEN_NOT_DEFAULT, cell=True)
    cupid_rollouts: int = setting(20, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    cupid_projection_dim: int = setting(512, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    cupid_damping: float = setting(0.01, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    cupid_weights: str = setting("success", fingerprint=WHEN_NOT_DEFAULT, cell=True)
    teacher_seed: int = setting(0, fingerprint=WHEN_NOT_DEFAULT, cell=True)
    holdout: float | None = setting(None, fingerprint=WHEN_NOT_DEFAULT)
    holdout_field: str | None = setting(None, fingerprint=WHEN_NOT_DEFAULT)
    obs_keys: tuple | None = setting(None, fingerprint=WHEN_NOT_DEFAULT)
    keep_within: str = setting("pool", fingerprint=WHEN_NOT_DEFAULT, cell=True)
    task_one_hot: bool = setting(False, fingerprint=WHEN_NOT_DEFAULT)
    # the learner's hyper-parameters away from their defaults (sorted (name, value) pairs): none by default
    learner_options: tuple = setting((), fingerprint=WHEN_NOT_DEFAULT)
    progress: bool = setting(False, fingerprint=NEVER, compare=False)
    data: Any = setting(None, fingerprint=NEVER, compare=False, repr=False)
    device: str = setting("cpu", fingerprint=NEVER, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.digest, str):
            raise ValueError(f"digest must be a string; got {self.digest!r}")
        curricula = tuple(self.curricula)
        if not curricula or len(set(curricula)) != len(curricula):
            raise ValueError(f"curricula must be distinct names from {list(CURRICULA)} or plug-ins; "
                             f"got {list(curricula)}")
        if self.use not in USES:
            raise ValueError(f"use must be one of {USES}; got {self.use!r}")
        object.__setattr__(self, "curricula", curricula)
        names = [self._cell_name(spec) for spec in curricula]
        if not isinstance(self.task_difficulty, str) or not self.task_difficulty:
            raise ValueError(f"task_difficulty must name a score; got {self.task_difficulty!r}")
        resolved: dict = {}
        for written in curricula:  # Cur and Cur@order (with use order) are the same runs
            spec = self._resolved(written)
            same = resolved.setdefault((variant_name(check_variant(spec.curriculum)), spec.use, spec.task), written)
            if same != written:
                raise ValueError(f"curricula must not repeat a cell: {same!r} and {written!r} are the same (use "
                                 f"{spec.use}, task score {spec.task}); give it once")
        if len(set(names)) != len(names):
            raise ValueError(f"curricula must have distinct names; got {names}")
        check_settings(self)  # the other settings
        if self.learner_options:  # the policy's own, in range, sorted, none at its default (as the commands give)
            from curteach_teaching.learners.dataset_learner import learner_kind
            from curteach_teaching.learners.hyperparameters import learner_options

            options = tuple(map(tuple, self.learner_options))
            if learner_options(learner_kind(self.policy)[0], dict(options)) != options:
                raise ValueError(f"learner_options must be sorted (name, value) pairs away from their defaults; got "
                                 f"{self.learner_options!r}")
            object.__setattr__(self, "learner_options", options)

    @property
    def cells(self) -> tuple:
        """One cell per curriculum, named as it (a plug-in by its ``name``) with the use it takes from the sweep
        where that is not ``order``: ``--use select`` makes ``Cur-T`` the cell ``Cur-T+select``."""
        return tuple(self.curriculum_names())

    def _cell_name(self, spec: str) -> str:
        written = parse_cell(spec)
        if written.use is None and self.use != "order" and check_variant(written.curriculum) != AGN:
            # a cell that selects or weights says so in its name (stdout, legends, folders), wherever the use is given
            written = dataclasses.replace(written, use=self.use)
        return written.name

    def curriculum_names(self) -> dict:
        """``cell name -> curriculum spec`` (the whole ``CURRICULUM[@USE][/TASK]``)."""
        return {self._cell_name(spec): spec for spec in self.curricula}

    def renamed_cells(self) -> dict:
        """``{old name: name}`` of the cells named otherwise before their name said the sweep's use (``Cur`` of a
        ``--use select`` sweep, now ``Cur+select``), for :mod:`~curteach_teaching.experiments.dataset_bc.migrate`."""
        return {parse_cell(spec).name: name for name, spec in self.curriculum_names().items()
                if parse_cell(spec).name != name}

    def cell_spec(self, cell: str) -> CellSpec:
        """The :class:`~curteach_teaching.experiments.dataset_bc.cells.CellSpec` of ``cell`` with the sweep's use and
        task score filled in where it names none (Agn: ``use="order"``, no task)."""
        return self._resolved(self.curriculum_names()[cell])

    def _resolved(self, written: str) -> CellSpec:
        spec = parse_cell(written)
        if spec.curriculum == AGN:
            return CellSpec(AGN, "order", None)
        return CellSpec(spec.curriculum, spec.use or self.use, spec.task or self.task_difficulty)

    def use_of(self, cell: str):
        """The :mod:`~curteach_teaching.curriculum.uses` object of ``cell``."""
        use = self.cell_spec(cell).use
        if use == "select":  # within groups: the training part's groups, in the demonstrations' order
            return Select(self.keep, groups=self.data.groups if self.keep_within == "group" else None)
        return Weight(self.temperature) if use == "weight" else Order()

    def tasks(self) -> list[str]:
        """The task scores the cells read (those of curricula without a teacher term included)."""
        return sorted({spec.task for spec in map(self.cell_spec, self.cells) if spec.task is not None})

    def settings(self) -> dict:
        """The settings every cell's runs share, JSON-serialisable (fingerprinted into run files with the cell's
        own, :meth:`cell_settings`): each field by its declared rule
        (:func:`~curteach_teaching.sweeps.fingerprints.shared_settings`), without the cells and what only some cells
        read (the task score, the use, ``keep``, ``temperature``, the ensemble's settings). So a folder's sweep may
        gain, lose or reorder cells and compute only the missing runs, and a flag no cell reads does not make it
        another sweep."""
        # the data is named by its digest only: a moved dataset resumes (folders that named the datasets' paths are
        # upgraded by experiments.dataset_bc.migrate)
        if not self.digest:
            raise ValueError("the settings name the data by its digest: prepare(pool) the experiment first")
        # the held-out split's seed: every run reads it
        data = shared_settings(self, read_by_every_cell=("teacher_seed",) if self.holdout is not None else ())
        if "obs_keys" in data:
            data["obs_keys"] = list(self.obs_keys)
        if "learner_options" in data:
            data["learner_options"] = dict(self.learner_options)
        data["experiment"] = "dataset-bc"
        return data

    def cell_settings(self, cell: str) -> dict:
        """The settings of ``cell``'s runs beyond :meth:`settings`: its curriculum, use and task score as resolved
        (:meth:`cell_spec`; Agn has neither), and the settings of that use and score it reads (``keep`` to select,
        ``temperature`` to weight, each trained score's ``settings()`` and ``teacher_seed`` to read a trained
        score: ``ensemble_size``, ``ensemble_batches``, ``teacher_seed`` for ``ensemble``)."""
        spec = self.cell_spec(cell)
        own: dict = {"curriculum": spec.curriculum, "use": spec.use, "task": spec.task}
        if spec.use == "select":
            own.update(cell_fields(self, ("keep", "keep_within")))
        elif spec.use == "weight":
            own.update(cell_fields(self, ("temperature",)))
        trained = () if spec.task is None else trained_terms([spec.task])
        for term in trained:  # what each trained score says changes its values, then the seed it is fitted with
            own.update(trained_score(term, self.score_options()).settings())
        if trained:
            own["teacher_seed"] = self.teacher_seed
        return own

    def score_options(self) -> dict:
        """``{name: value}`` of every field, the options trained scores are built from
        (:func:`~curteach_teaching.datasets.scores.registry.trained_score`: each reads its own)."""
        return {name: getattr(self, name) for name in setting_names(self)}

    def schedule(self, n_transitions: int) -> tuple[int | None, int]:
        """``(steps per epoch or None, epochs)`` for a pool of ``n_transitions``: the equal budget's
        ``ceil(n / batch_size)`` steps per epoch (``None`` for ``per-epoch``) and E (given, or enough epochs of
        that size to fill ``max_batches``)."""
        per_epoch = math.ceil(n_transitions / self.batch_size)
        epochs = self.epochs if self.epochs is not None else max(1, math.ceil(self.max_batches / per_epoch))
        return (per_epoch if self.budget == "equal" else None), epochs

    def prepare(self, pool) -> DatasetBCExperiment:
        """These settings with the data of ``pool`` (read once by the caller): everything a run needs, computed once
        and checked before anything is written (:func:`~curteach_teaching.datasets.prepare.prepare`: the
        observation codec and the encoded trajectories, a policy for the spaces, every task score the cells read but
        the trained ones, :meth:`fit`), and a plug-in curriculum; a missing field or a NaN names the episode. With
        :attr:`holdout`, the pool is split first
        (:func:`~curteach_teaching.experiments.dataset_bc.held_out.held_out_split`, seeded by :attr:`teacher_seed`):
        everything is computed on the training part, and the held-out episodes are only encoded, for scoring.

        Returns:
            A copy with :attr:`data` set (and :attr:`digest`, when it was empty).

        Raises:
            ValueError: one line naming the problem (a pool of other data than :attr:`digest`, a bad task score, a
                space without a policy, ...).
        """
        from curteach_teaching.datasets.prepare import prepare
        from curteach_teaching.datasets.prepared import pool_digest

        digest = pool_digest(pool)
        if self.digest and self.digest != digest:
            raise ValueError("the pool is not the data these settings name (its digest differs)")
        split = None
        if self.holdout is not None:
            from curteach_teaching.experiments.dataset_bc.held_out import held_out_split, trusted_episodes

            trusted = (None if self.holdout_field is None
                       else trusted_episodes(pool.metadata, self.holdout_field, pool.infos))
            split = held_out_split(pool.groups, self.holdout, self.teacher_seed, trusted)
        # the sweep's task score is checked even when every cell names its own (or is Agn): a flag is checked
        # whether or not the cells use it; only the scores the cells read are kept
        data = prepare(pool, self.tasks(), checked=[self.task_difficulty], policy=self.policy, split=split,
                       task_one_hot=self.task_one_hot)
        return dataclasses.replace(self, digest=digest, data=data)

    def unfitted(self) -> list[str]:
        """The trained task scores the cells read that :meth:`fit` has not computed yet."""
        from curteach_teaching.datasets.prepare import unfitted

        return unfitted(self.data, self.tasks())

    def cache_label(self) -> str:
        """What else keys the trained scores' cached files: the policy and the pool's digest."""
        from curteach_teaching.learners.hyperparameters import options_label

        return f"{self.policy}|{self.digest}{options_label(self.learner_options)}"

    def fit(self, *, teacher_cache: str | None = None, progress: bool = False,
            say: Callable[[str], None] | None = None) -> DatasetBCExperiment:
        """These settings with every trained task score the cells read computed, once, here in the driver
        (:func:`~curteach_teaching.datasets.prepare.fit_scores`, with :attr:`teacher_seed` and the policy of
        :attr:`policy`); read from ``teacher_cache`` (a folder, ``DIR/teachers``) when fitted before, else written
        there atomically (``None``: not cached); a damaged cached file is said in one line, fitted again and
        replaced.

        Args:
            teacher_cache: the cache folder; progress: bars; say: prints what each score says it does.

        Raises:
            ValueError: not prepared (:meth:`prepare` first), or a trained score that failed (one line).
        """
        if self.data is None:
            raise ValueError("prepare(pool) the experiment before fitting its trained scores")
        if not self.unfitted():
            return self
        from curteach_teaching.datasets.prepare import fit_scores, learner_factory
        from curteach_teaching.sweeps.devices import run_device

        data = self.data
        scores = {name: trained_score(name, self.score_options()) for name in self.unfitted()}
        device = run_device(self.device)
        learner = learner_factory(self.policy, data, batch_size=self.batch_size, learning_rate=self.learning_rate,
                                  device=device, options=self.learner_options)
        data = fit_scores(data, self.tasks(), scores, learner=learner, device=device,
                          seed=self.teacher_seed, cache=teacher_cache, label=self.cache_label(), progress=progress,
                          say=say)
        return dataclasses.replace(self, data=data)

    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of curriculum ``cell`` on the prepared data
        (:func:`~curteach_teaching.experiments.dataset_bc.run.run_once`)."""
        if cell not in self.cells:
            raise ValueError(f"cell must be one of {list(self.cells)}; got {cell!r}")
        if self.data is None or self.unfitted():
            raise ValueError("prepare(pool) the experiment (and fit() its fitted task scores) before running it")
        from curteach_teaching.experiments.dataset_bc.run import run_once

        return run_once(self, self.data, cell, index, seed_sequence)
