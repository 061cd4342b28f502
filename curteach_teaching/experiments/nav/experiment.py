"""The learner-centric experiment on the navigation tasks: the paper's Figs. 6 and 7 (Section 6).

No teacher is present: a CNN learner trained by behaviour cloning (imitation's ``BC``, through
:class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC`) orders the shortest-path or TSP training
demonstrations itself.
One cell per curriculum (``Agn``, ``Cur``, ``Cur-L``, ``Cur-T``); run ``i`` of every curriculum starts from the same
network weights and dropout stream (``SeedSequence([seed, i])``), so the curricula are compared on paired runs.

One run, as the original's ``main.py`` (docs/experiments/nav.md and docs/deviations.md say where we differ):

1. the network of :class:`~curteach_teaching.learners.networks.NavigationCNNPolicy` (779,971 parameters, PyTorch's
   default initialisation drawn from the run's seed), plain SGD at 0.01;
2. 40 epochs; at the start of each, the curriculum scores every training demonstration by the learner's
   ``log Psi^L`` (teacher-forced, eval mode, no grad), combines it with the task-specific ``log Psi^E``
   (:func:`~curteach_teaching.difficulty.teacher_log_difficulty`), keeps the ``LinearPacing(a=0.8, b=0.5)`` most
   preferred, permutes them at random and trains on consecutive batches of 32 whole demonstrations (the last one
   partial), each one SGD step on the original's loss (per batch, the sum over time steps of the mean cross-entropy
   over the demonstrations still active). Agn trains on every demonstration every epoch;
3. the learning rate halves every 5,000 optimizer steps (``lr_period``; the paper says 500);
4. before training and every 100 optimizer steps (``eval_every``), and at the end of every epoch, the current model is
   evaluated on the validation split (greedy rollouts, mean return per datapoint,
   :func:`~curteach_teaching.experiments.nav.evaluation.evaluate_split`); it becomes the best model if its return is
   ``>=`` the best so far, and the test return of the best model is recorded.

The run's result (:mod:`~curteach_teaching.experiments.nav.report`) holds the curve of the best model's test return
(and the validation returns) against optimizer steps, the features of the demonstrations trained on, the per-epoch
selection, and the best model's ``state_dict`` as the artifact ``model.pt``.

Divergence: plain SGD on the summed loss can blow up (a TSP run of Cur went from weights below 1 to 1e29 and then
NaN within 20 steps). A step after which a parameter is not finite, or a model whose logits are not finite when it is
evaluated, ends the run's training at that step: ``extras["diverged"]`` records the step, no model of the diverged
stretch is evaluated or selected, and the remaining evaluation points up to the planned end keep the best model's
test return (which can no longer change), the features and demonstrations seen as they were, and a validation
return of NaN (undefined for a broken network). The run is saved as usual and the report counts it.

Checkpoints: with ``checkpoint_dir`` set, a run saves its whole state at the end of every epoch (network, optimizer,
curriculum and learning-rate state, random generators, curves so far) and an interrupted run resumes from its last
checkpoint with the same result as an uninterrupted one. A checkpoint is scratch state of the worker that runs the
run (on a cluster without a shared disk a resumed run may start over); it is removed when the run ends.

A run is assembled from public parts (:class:`~curteach_teaching.experiments.nav.run.NavRun` and
:mod:`~curteach_teaching.experiments.nav.parts`), which a notebook may use on their own or replace.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write, check_int
from curteach_teaching.curriculum.selection import check_curricula, curriculum_cells
from curteach_teaching.difficulty import DIFFICULTY_VARIANTS
from curteach_teaching.experiments.nav.data import NAV_TASKS, PAPER_WINDOW
from curteach_teaching.names import PAPER_CURRICULA
from curteach_teaching.sweeps.fingerprints import NEVER, WHEN_NOT_DEFAULT, setting, shared_settings
from curteach_teaching.sweeps.results import RunResult

__all__ = ["CURRICULA", "LOSSES", "OPTIMIZERS", "NavExperiment"]

#: The curricula of Figs. 6 and 7, in the paper's order.
CURRICULA = PAPER_CURRICULA
LOSSES = ("original", "mean")
#: ``"sgd"``: the original's plain SGD; ``"adam"``: Adam (opt-in, ``curteach nav --scale demo``; docs/deviations.md).
OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class NavExperiment:
    """Settings of the navigation experiment; :meth:`run_cell` performs one run of one curriculum.

    Args:
        dataset: the dataset file (``.npz`` of :func:`curteach_envs.navigation.dataset.save_dataset`).
        dataset_digest: its SHA-256 (:func:`~curteach_teaching.experiments.nav.data.file_digest`); identifies the
            data in the settings, so runs on another dataset are never reused.
        task: ``"shortest_path"`` or ``"tsp"`` (must match the dataset).
        curricula: the cells, from :data:`CURRICULA`.
        epochs: pacing schedule length E (40).
        max_batches: stop a run after this many optimizer steps (``None``: all epochs). The paper's figure shows
            batches 1,000-11,000 (shortest path) and 1,000-6,000 (TSP).
        eval_every: evaluate every this many optimizer steps (100).
        demos_per_batch: demonstrations per batch (32).
        learning_rate: the optimizer's initial rate (0.01).
        lr_period: halve the rate every this many optimizer steps (5,000, the original; the paper says 500).
        loss: ``"original"`` (per batch, the sum over steps of the mean cross-entropy over active demonstrations) or
            ``"mean"`` (imitation's mean over state-action pairs).
        optimizer: ``"sgd"`` (the original's plain SGD, no momentum) or ``"adam"`` (``torch.optim.Adam`` with its
            default betas; opt-in, not the paper's protocol). Left out of :meth:`settings` when ``"sgd"``, so the
            run files of SGD runs keep their fingerprints.
        teacher_difficulty: ``"original"`` or ``"paper"``
            (see :func:`~curteach_teaching.difficulty.teacher_log_difficulty`).
        pacing_a, pacing_b: :class:`~curteach_teaching.curriculum.pacing.LinearPacing`'s ``a`` and ``b``.
        device: ``"cpu"``, ``"cuda"`` (resolve ``"auto"`` with
            :func:`~curteach_teaching.sweeps.devices.sweep_device` first); a run in worker ``k`` of a process pool
            trains on GPU ``k - 1`` mod the GPUs (:func:`~curteach_teaching.sweeps.devices.run_device`). A setting
            (the runs of one device are not reused for another: their numbers differ).
        checkpoint_dir: where runs save per-epoch checkpoints (``None``: no checkpoints); not a setting.
        progress: show a progress bar per run; not a setting.
        dataset_bytes: the dataset file's bytes, for workers that cannot read ``dataset`` (a cluster without the
            driver's disk): a worker without the file writes them to its temporary folder once and reads that copy.
            Not a setting (the digest is).
    """

    # the dataset is named by its digest: its path never enters the runs' fingerprint
    dataset: str = setting(fingerprint=NEVER)
    dataset_digest: str
    task: str = "shortest_path"
    curricula: tuple = CURRICULA
    epochs: int = 40
    max_batches: int | None = None
    eval_every: int = 100
    demos_per_batch: int = 32
    learning_rate: float = 0.01
    lr_period: int = 5000
    loss: str = "original"
    teacher_difficulty: str = "original"
    optimizer: str = setting("sgd", fingerprint=WHEN_NOT_DEFAULT)  # every run made before the option: SGD
    pacing_a: float = 0.8
    pacing_b: float = 0.5
    device: str = "cpu"
    checkpoint_dir: str | None = setting(None, fingerprint=NEVER, compare=False)
    progress: bool = setting(False, fingerprint=NEVER, compare=False)
    dataset_bytes: bytes | None = setting(None, fingerprint=NEVER, compare=False, repr=False)

    def __post_init__(self):
        if self.task not in NAV_TASKS.values():
            raise ValueError(f"task must be one of {tuple(NAV_TASKS.values())}; got {self.task!r}")
        object.__setattr__(self, "curricula", check_curricula(self.curricula, CURRICULA))
        for name in ("epochs", "eval_every", "demos_per_batch", "lr_period"):
            check_int(name, getattr(self, name), 1)
        if self.max_batches is not None:
            check_int("max_batches", self.max_batches, 1)
        for name in ("learning_rate", "pacing_a", "pacing_b"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError(f"{name} must be a finite number; got {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0; got {self.learning_rate}")
        if not 0 < self.pacing_a or not 0 <= self.pacing_b <= 1:
            raise ValueError(f"pacing needs a > 0 and b in [0, 1]; got a={self.pacing_a}, b={self.pacing_b}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}; got {self.loss!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}; got {self.optimizer!r}")
        if self.teacher_difficulty not in DIFFICULTY_VARIANTS:
            raise ValueError(f"teacher_difficulty must be one of {DIFFICULTY_VARIANTS}; got "
                             f"{self.teacher_difficulty!r}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda' (resolve 'auto' first); got {self.device!r}")

    @property
    def cells(self) -> tuple:
        """One cell per curriculum, named as the curriculum (a plug-in by its ``name``)."""
        return tuple(self.curriculum_names())

    def curriculum_names(self) -> dict:
        """``cell name -> curriculum spec`` (the same for the built-ins)."""
        return curriculum_cells(self.curricula)

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files); the dataset is identified by its digest."""
        data = shared_settings(self)  # each field by its declared rule (sweeps.fingerprints)
        data["curricula"] = list(self.curricula)
        data["experiment"] = "nav"
        return data

    # ----------------------------------------------------------------- one run
    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of curriculum ``cell``; see the module docstring."""
        if cell not in self.cells:
            raise ValueError(f"cell must be one of {list(self.cells)}; got {cell!r}")
        from curteach_teaching.experiments.nav.run import NavRun
        from curteach_teaching.sweeps.backends import worker_context
        from curteach_teaching.sweeps.devices import run_device

        try:
            device = run_device(self.device)  # "cuda" -> this worker's GPU
        except ValueError as error:
            raise ValueError(f"run {index} of {cell} {error}") from None
        # math threads are the backend's (backends.one_math_thread); the bar's line is the worker's
        # the sweep's bar is line 0; a pool worker k draws on line k, the driver on line 1
        run = NavRun.build(self, cell, index, seed_sequence, bar_position=worker_context().index or 1, device=device)
        return run.run()

    def checkpoint_path(self, cell: str, index: int) -> Path | None:
        """The checkpoint file of run ``index`` of ``cell`` (``None`` without a ``checkpoint_dir``); its name holds
        the settings' fingerprint, so a run of other settings never resumes from it."""
        if self.checkpoint_dir is None:
            return None
        from curteach_teaching.sweeps.results import fingerprint

        return Path(self.checkpoint_dir) / f"{cell}_run_{index:05d}_{fingerprint(self.settings())}.pt"

    def local_dataset(self) -> str:
        """The dataset file to read on this machine: ``dataset`` if it is here with the right digest, else a copy of
        ``dataset_bytes`` in the temporary folder (written once per machine)."""
        from curteach_teaching.experiments.nav.data import file_digest

        if self.dataset_bytes is None:
            return self.dataset
        if Path(self.dataset).is_file() and file_digest(self.dataset) == self.dataset_digest:
            return self.dataset
        copy = Path(tempfile.gettempdir()) / "curteach-datasets" / f"{self.dataset_digest}.npz"
        if not copy.is_file() or file_digest(copy) != self.dataset_digest:
            atomic_write(copy, lambda stream: stream.write(self.dataset_bytes), binary=True)
        return str(copy)

    @property
    def window(self) -> tuple:
        """The batches the paper's figure for this task (Fig. 6 or 7) shows."""
        return PAPER_WINDOW[self.task]


def default_checkpoint_dir(out_dir: str | os.PathLike) -> str:
    """Where a sweep writing into ``out_dir`` keeps its runs' checkpoints."""
    return str(Path(out_dir) / "checkpoints")
