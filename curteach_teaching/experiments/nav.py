"""The learner-centric experiment on the navigation tasks: the paper's Figs. 6 and 7 (Section 6).

No teacher is present: a CNN learner trained by behaviour cloning (imitation's ``BC``, through
:class:`~curteach_teaching.curriculum.CurriculumBC`) orders the shortest-path or TSP training demonstrations itself.
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
   :func:`~curteach_teaching.evaluation.evaluate_split`); it becomes the best model if its return is ``>=`` the best
   so far, and the test return of the best model is recorded.

The run's result (:mod:`~curteach_teaching.experiments.nav_report`) holds the curve of the best model's test return
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
"""

from __future__ import annotations

import copy
import io
import os
import tempfile
import warnings
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write, check_int
from curteach_teaching.experiments.nav_data import NAV_TASKS, PAPER_WINDOW, prepare
from curteach_teaching.experiments.results import RunResult
from curteach_teaching.names import AGN, CUR, CUR_L, CUR_T

__all__ = ["CURRICULA", "DEVICES", "LOSSES", "NavExperiment", "resolve_device"]

#: The curricula of Figs. 6 and 7, in the paper's order.
CURRICULA = (AGN, CUR, CUR_L, CUR_T)
DEVICES = ("cpu", "cuda", "auto")
LOSSES = ("original", "mean")
TEACHER_VARIANTS = ("original", "paper")
#: Moving-average window of the curriculum features, in batches (the appendix's figures).
FEATURE_WINDOW = 100
CHECKPOINT_FORMAT = "curteach-nav-checkpoint-1"


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"`` if a GPU is visible, else ``"cpu"``; ``"cuda"`` without a GPU is a ``ValueError``."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}; got {device!r}")
    import torch as th

    if device == "auto":
        return "cuda" if th.cuda.is_available() else "cpu"
    if device == "cuda" and not th.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but torch sees no GPU")
    return device


@dataclass(frozen=True)
class NavExperiment:
    """Settings of the navigation experiment; :meth:`run_cell` performs one run of one curriculum.

    Args:
        dataset: the dataset file (``.npz`` of :func:`curteach_envs.navigation.dataset.save_dataset`).
        dataset_digest: its SHA-256 (:func:`~curteach_teaching.experiments.nav_data.file_digest`); identifies the
            data in the settings, so runs on another dataset are never reused.
        task: ``"shortest_path"`` or ``"tsp"`` (must match the dataset).
        curricula: the cells, from :data:`CURRICULA`.
        epochs: pacing schedule length E (40).
        max_batches: stop a run after this many optimizer steps (``None``: all epochs). The paper's figure shows
            batches 1,000-11,000 (shortest path) and 1,000-6,000 (TSP).
        eval_every: evaluate every this many optimizer steps (100).
        demos_per_batch: demonstrations per batch (32).
        learning_rate: SGD's initial rate (0.01).
        lr_period: halve the rate every this many optimizer steps (5,000, the original; the paper says 500).
        loss: ``"original"`` (per batch, the sum over steps of the mean cross-entropy over active demonstrations) or
            ``"mean"`` (imitation's mean over state-action pairs).
        teacher_difficulty: ``"original"`` or ``"paper"``
            (see :func:`~curteach_teaching.difficulty.teacher_log_difficulty`).
        pacing_a, pacing_b: :class:`~curteach_teaching.selection.LinearPacing`'s ``a`` and ``b``.
        device: ``"cpu"``, ``"cuda"`` (resolve ``"auto"`` with :func:`resolve_device` first).
        checkpoint_dir: where runs save per-epoch checkpoints (``None``: no checkpoints); not a setting.
        progress: show a progress bar per run; not a setting.
        dataset_bytes: the dataset file's bytes, for workers that cannot read ``dataset`` (a cluster without the
            driver's disk): a worker without the file writes them to its temporary folder once and reads that copy.
            Not a setting (the digest is).
    """

    dataset: str
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
    pacing_a: float = 0.8
    pacing_b: float = 0.5
    device: str = "cpu"
    checkpoint_dir: str | None = field(default=None, compare=False)
    progress: bool = field(default=False, compare=False)
    dataset_bytes: bytes | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.task not in NAV_TASKS.values():
            raise ValueError(f"task must be one of {tuple(NAV_TASKS.values())}; got {self.task!r}")
        curricula = tuple(self.curricula)
        unknown = [c for c in curricula if c not in CURRICULA]
        if unknown or not curricula or len(set(curricula)) != len(curricula):
            raise ValueError(f"curricula must be distinct names from {list(CURRICULA)}; got {list(curricula)}")
        object.__setattr__(self, "curricula", curricula)
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
        if self.teacher_difficulty not in TEACHER_VARIANTS:
            raise ValueError(f"teacher_difficulty must be one of {TEACHER_VARIANTS}; got {self.teacher_difficulty!r}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda' (resolve 'auto' first); got {self.device!r}")

    @property
    def cells(self) -> tuple:
        """One cell per curriculum."""
        return self.curricula

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files); the dataset is identified by its digest."""
        data = asdict(self)
        for name in ("dataset", "checkpoint_dir", "progress", "dataset_bytes"):
            data.pop(name)
        data["curricula"] = list(self.curricula)
        data["experiment"] = "nav"
        return data

    # ----------------------------------------------------------------- one run
    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of curriculum ``cell``; see the module docstring."""
        if cell not in self.curricula:
            raise ValueError(f"cell must be one of {list(self.curricula)}; got {cell!r}")
        import torch as th

        if self.device == "cuda" and not th.cuda.is_available():
            raise ValueError(f"run {index} of {cell} needs a GPU, but torch in pid {os.getpid()} sees none")
        # One math thread for every run, in a worker or in this process: float sums then do not depend on the
        # backend or the worker count (runs run side by side instead), and a loaded machine is not oversubscribed.
        threads = th.get_num_threads()
        th.set_num_threads(1)
        try:
            with warnings.catch_warnings():
                # imitation's BC logger calls float() on tensors that require grad (harmless)
                warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
                return _NavRun(self, cell, index, seed_sequence).run()
        finally:
            th.set_num_threads(threads)

    def local_dataset(self) -> str:
        """The dataset file to read on this machine: ``dataset`` if it is here with the right digest, else a copy of
        ``dataset_bytes`` in the temporary folder (written once per machine)."""
        from curteach_teaching.experiments.nav_data import file_digest

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


class _FeatureTracker:
    """Moving average of the trained demonstrations' features over the last :data:`FEATURE_WINDOW` batches."""

    def __init__(self, features: np.ndarray, demo_of_transition: np.ndarray, time_step: np.ndarray):
        self.features = features
        self.demo_of_transition = demo_of_transition
        self.first = time_step == 0
        self.window: deque = deque(maxlen=FEATURE_WINDOW)
        self.seen = 0

    def add(self, transitions: np.ndarray) -> None:
        demos = self.demo_of_transition[transitions[self.first[transitions]]]
        self.window.append(self.features[demos].mean(axis=0))
        self.seen += demos.size

    def current(self) -> np.ndarray:
        """``(F,)``: the mean over the window (the whole training set's mean before any batch)."""
        if not self.window:
            return self.features.mean(axis=0)
        return np.mean(np.array(self.window), axis=0)

    def state_dict(self) -> dict:
        return {"window": [w.tolist() for w in self.window], "seen": self.seen}

    def load_state_dict(self, state: dict) -> None:
        self.window = deque((np.asarray(w) for w in state["window"]), maxlen=FEATURE_WINDOW)
        self.seen = int(state["seen"])


class _NavRun:
    """The state of one run: network, trainer, curriculum, evaluation and checkpoints."""

    def __init__(self, experiment: NavExperiment, cell: str, index: int, seed_sequence: np.random.SeedSequence):
        import torch as th
        from imitation.algorithms.bc import BC

        from curteach_teaching.curriculum import CurriculumBC, StepHook, StepLRHook, silent_logger
        from curteach_teaching.evaluation import TaskBatch
        from curteach_teaching.learners.networks import NavigationCNNPolicy
        from curteach_teaching.selection import LinearPacing

        self.th = th
        self.experiment, self.cell, self.index = experiment, cell, index
        data = prepare(experiment.local_dataset(), experiment.dataset_digest)
        if data.kind != experiment.task:
            raise ValueError(f"the dataset holds {data.kind} tasks, not {experiment.task}")
        self.data = data
        # the same draws for every curriculum of run i: paired network weights, dropout masks and permutations
        network_seed, curriculum_seed, trainer_seed = seed_sequence.spawn(3)
        torch_seed = int(network_seed.generate_state(1, np.uint64)[0] >> np.uint64(1))
        self.policy = NavigationCNNPolicy.for_navigation(seed=torch_seed, device=experiment.device)
        self.trainer = BC(
            observation_space=self.policy.observation_space,
            action_space=self.policy.action_space,
            rng=np.random.default_rng(trainer_seed),
            policy=self.policy,
            batch_size=experiment.demos_per_batch,
            optimizer_cls=th.optim.SGD,
            optimizer_kwargs={"lr": experiment.learning_rate},
            ent_weight=0.0,
            l2_weight=0.0,
            device=experiment.device,
            custom_logger=silent_logger(),
        )
        teacher = data.teacher[experiment.teacher_difficulty] if cell in (CUR, CUR_T) else None
        self.lr_hook = StepLRHook(self.trainer.optimizer, period=experiment.lr_period, gamma=0.5)
        self.curriculum = CurriculumBC(
            self.trainer,
            data.trajectories,
            variant=cell,
            teacher=teacher,
            pacing=LinearPacing(experiment.pacing_a, experiment.pacing_b),
            rng=np.random.default_rng(curriculum_seed),
            batch_unit="demonstrations",
            demos_per_batch=experiment.demos_per_batch,
            loss="mean" if experiment.loss == "mean" else "original",
            hooks=[self.lr_hook, StepHook(1, self._after_step), StepHook(experiment.eval_every, self._evaluate,
                                                                       at_start=True)],
        )
        lengths = np.array([len(t.acts) for t in data.trajectories])
        demo_of_transition = np.repeat(np.arange(lengths.size), lengths)
        self.features = _FeatureTracker(data.features, demo_of_transition, self.curriculum.time_steps(
            np.arange(lengths.sum())))
        self.val_batch = TaskBatch.from_split(data.val)
        self.test_batch = TaskBatch.from_split(data.test)
        self.epoch_groups: list = []
        self.epoch_first_step = 0
        self.best_val = -np.inf
        self.best_state = None
        self.best_test = np.nan
        self.curve = {"batches": [], "seen": [], "val": [], "test": [], "features": []}
        self.per_epoch = {"val": [], "test": [], "selected_fraction": [], "batches": []}
        self.bar = None
        self.diverged_at: int | None = None
        # the curriculum's epoch batches: which demonstrations each optimizer step trains on (for the features)
        original_epoch_batches = self.curriculum.epoch_batches

        def epoch_batches(selected):
            groups = original_epoch_batches(selected)
            self.epoch_groups, self.epoch_first_step = groups, self.curriculum.step
            return groups

        self.curriculum.epoch_batches = epoch_batches

    # ------------------------------------------------------------- evaluation
    def _evaluate_split(self, split, batch) -> float:
        from curteach_teaching.evaluation import evaluate_split

        return evaluate_split(self.policy, split, device=self.experiment.device, batch=batch).mean_return

    def _consider(self) -> float:
        """Evaluate the current model on validation; keep it as the best if ``>=``; return its validation return.

        Raises:
            LearnerDiverged: the model's logits are not finite.
        """
        from curteach_teaching.evaluation import NonFiniteLogits
        from curteach_teaching.learners.divergence import LearnerDiverged

        try:
            val = self._evaluate_split(self.data.val, self.val_batch)
        except NonFiniteLogits as error:
            raise LearnerDiverged(f"step {self.curriculum.step}: {error}") from None
        if val >= self.best_val:
            self.best_val = val
            self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in self.policy.state_dict().items()}
            self.best_test = self._evaluate_split(self.data.test, self.test_batch)
        return val

    def _evaluate(self, step: int) -> None:
        val = self._consider()
        self.curve["batches"].append(step)
        self.curve["seen"].append(self.features.seen)
        self.curve["val"].append(val)
        self.curve["test"].append(self.best_test)
        self.curve["features"].append(self.features.current().tolist())
        if self.bar is not None:
            self.bar.set_postfix(val=f"{val:.3f}", test=f"{self.best_test:.3f}", refresh=False)

    def _after_step(self, step: int) -> None:
        # one device sync per step, not one per parameter tensor
        if not bool(self.th.stack([self.th.isfinite(p).all() for p in self.policy.parameters()]).all()):
            from curteach_teaching.learners.divergence import LearnerDiverged

            raise LearnerDiverged(f"step {step}: a parameter is not finite")
        self.features.add(self.epoch_groups[step - self.epoch_first_step - 1])
        if self.bar is not None:
            self.bar.update()

    def _on_epoch_end(self, record) -> None:
        val = self._consider()
        self.per_epoch["val"].append(val)
        self.per_epoch["test"].append(self.best_test)
        self.per_epoch["selected_fraction"].append(float(record.fraction))
        self.per_epoch["batches"].append(int(self.curriculum.step))
        self.epoch = record.epoch
        if self.bar is not None:
            self.bar.set_description(f"{self.cell} run {self.index} epoch {record.epoch}/{self.experiment.epochs}")
        self._save_checkpoint()

    # ------------------------------------------------------------ checkpoints
    def _checkpoint_path(self) -> Path | None:
        if self.experiment.checkpoint_dir is None:
            return None
        from curteach_teaching.experiments.results import fingerprint

        name = f"{self.cell}_run_{self.index:05d}_{fingerprint(self.experiment.settings())}.pt"
        return Path(self.experiment.checkpoint_dir) / name

    def _state(self) -> dict:
        return {
            "format": CHECKPOINT_FORMAT,
            "epoch": self.epoch,
            "policy": self.policy.state_dict(),
            "optimizer": self.trainer.optimizer.state_dict(),
            "dropout": self.policy.net.dropout.get_rng_state(),
            "curriculum": self.curriculum.state_dict(),
            "features": self.features.state_dict(),
            "best": {"val": self.best_val, "test": self.best_test, "state": self.best_state},
            "curve": copy.deepcopy(self.curve),
            "per_epoch": copy.deepcopy(self.per_epoch),
        }

    def _save_checkpoint(self) -> None:
        path = self._checkpoint_path()
        if path is None:
            return
        buffer = io.BytesIO()
        self.th.save(self._state(), buffer)
        atomic_write(path, lambda stream: stream.write(buffer.getvalue()), binary=True)

    def _load_checkpoint(self) -> int:
        """Restore the last checkpoint if there is one; return the first epoch still to train."""
        path = self._checkpoint_path()
        if path is None or not path.exists():
            return 1
        try:
            state = self.th.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
                raise ValueError("not a navigation checkpoint")
            self.policy.load_state_dict(state["policy"])
            self.trainer.optimizer.load_state_dict(state["optimizer"])
            self.policy.net.dropout.set_rng_state(state["dropout"])
            self.curriculum.load_state_dict(state["curriculum"])
            self.features.load_state_dict(state["features"])
        except Exception as error:  # any damage: name the file, keep it for inspection
            raise ValueError(
                f"checkpoint {str(path)!r} cannot be used ({type(error).__name__}: "
                f"{(str(error).strip().splitlines() or [''])[0]}); delete it to restart that run from scratch"
            ) from error
        best = state["best"]
        self.best_val, self.best_test, self.best_state = best["val"], best["test"], best["state"]
        self.curve, self.per_epoch = state["curve"], state["per_epoch"]
        self.epoch = int(state["epoch"])
        return self.epoch + 1

    def _planned_batches(self) -> int:
        """Optimizer steps the run will take: batches per epoch from the pacing schedule, cut at ``max_batches``."""
        from curteach_teaching.selection import LinearPacing

        experiment, n = self.experiment, len(self.data.trajectories)
        pacing = LinearPacing(experiment.pacing_a, experiment.pacing_b)
        kept = [n if self.cell == AGN else pacing(e, experiment.epochs, n) for e in range(1, experiment.epochs + 1)]
        total = sum(-(-k // experiment.demos_per_batch) for k in kept)
        return total if experiment.max_batches is None else min(total, experiment.max_batches)

    # -------------------------------------------------------------------- run
    def run(self) -> RunResult:
        experiment = self.experiment
        self.epoch = 0
        start = self._load_checkpoint()
        if experiment.progress:
            from tqdm import tqdm

            self.bar = tqdm(total=self._planned_batches(), initial=self.curriculum.step, unit="batch", leave=False,
                            desc=f"{self.cell} run {self.index} epoch {self.epoch}/{experiment.epochs}",
                            position=_bar_position(), dynamic_ncols=True)
        from curteach_teaching.learners.divergence import LearnerDiverged

        try:
            self.policy.set_training_mode(True)
            self.curriculum.train(experiment.epochs, start_epoch=start, max_steps=experiment.max_batches,
                                  on_epoch_end=self._on_epoch_end)
        except LearnerDiverged:
            self._close_diverged()
        finally:
            if self.bar is not None:
                self.bar.close()
        result = self._result()
        path = self._checkpoint_path()
        if path is not None:
            path.unlink(missing_ok=True)
        return result

    def _close_diverged(self) -> None:
        """Stop at the divergence step and fill the evaluation points still planned (see the module docstring)."""
        self.diverged_at = int(self.curriculum.step)
        every = self.experiment.eval_every
        last = self.curve["batches"][-1] if self.curve["batches"] else -every
        for batches in range((last // every + 1) * every, self._planned_batches() + 1, every):
            self.curve["batches"].append(batches)
            self.curve["seen"].append(self.features.seen)
            self.curve["val"].append(float("nan"))
            self.curve["test"].append(self.best_test)
            self.curve["features"].append(self.features.current().tolist())

    def _result(self) -> RunResult:
        curve = self.curve
        features = np.array(curve["features"])  # (K, F)
        curves = {"test": np.array(curve["test"]), "val": np.array(curve["val"])}
        for j, name in enumerate(self.data.feature_names):
            curves[f"feature:{name}"] = features[:, j]
        buffer = io.BytesIO()
        self.th.save(self.best_state, buffer)
        return RunResult(
            index=self.index,
            seed=0,
            curves=curves,
            records={"batches": {"test": np.array(curve["batches"], dtype=np.int64)},
                     "seen": {"test": np.array(curve["seen"], dtype=np.int64)}},
            extras={
                "batches": int(self.curriculum.step),
                "epochs": int(self.epoch),
                "best_val": float(self.best_val),
                "best_test": float(self.best_test),
                "epoch_val": self.per_epoch["val"],
                "epoch_test": self.per_epoch["test"],
                "epoch_batches": self.per_epoch["batches"],
                "selected_fraction": self.per_epoch["selected_fraction"],
                **({} if self.diverged_at is None else {"diverged": self.diverged_at}),
            },
            cell=self.cell,
            artifacts={"model.pt": buffer.getvalue()},
        )


def _bar_position() -> int:
    """The line of a run's progress bar: the sweep's bar is line 0; a pool worker ``...PoolWorker-k`` draws on line
    ``k``, the driver's own process on line 1."""
    import multiprocessing

    name = multiprocessing.current_process().name
    suffix = name.rsplit("-", 1)[-1]
    return int(suffix) if "PoolWorker" in name and suffix.isdigit() else 1


def default_checkpoint_dir(out_dir: str | os.PathLike) -> str:
    """Where a sweep writing into ``out_dir`` keeps its runs' checkpoints."""
    return str(Path(out_dir) / "checkpoints")
