"""Curricula for every imitation trainer on the car: BC, DAgger, GAIL, AIRL and MCE-IRL (``curteach car-trainers``).

Cells are ``trainer x curriculum`` (``"gail_Cur"``, ...). Run ``i`` of every cell draws from
``SeedSequence([seed, i])`` and builds the same road, expert, demonstration pool and pre-trained learner as run
``i`` of ``curteach car-bc`` (:meth:`CarBCExperiment.build
<curteach_teaching.experiments.car.bc.CarBCExperiment.build>`: a fresh road with gamma 0.999, the hard-VI expert,
10 demonstrations of 10 steps per start, the quadratic BC learner pre-trained on the ``--init`` starts); then one
further child of the run's seed sequence seeds the trainer. So every curriculum of a trainer, and every trainer,
starts from the same learner on the same demonstrations, and the comparisons between curricula are paired.

A run of a cell trains the trainer for ``steps`` curriculum epochs with its adapter
(:mod:`~curteach_teaching.experiments.car.recipes`) and records the exact expected reward of the learner's
policy before and after each (curve ``"reward"``, ``steps + 1`` points), and the mean training loss of each epoch
(curve ``"train:loss"``, NaN at point 0; not for MCE-IRL, which has no loss).

The trainers and curricula are looked up by name. Trainers in
:data:`~curteach_teaching.experiments.car.recipes.CAR_TRAINERS`: the
built-in recipes, or a user's recipe by ``module:attr`` or a ``curteach.car_trainers`` entry point, whose cells are
named by its ``name`` (an unknown name gets the registry's error listing the available ones). Curricula as the
selection looks them up (:func:`~curteach_teaching.curriculum.selection.check_variant`): the built-ins Agn, Cur, Cur-T,
Cur-L,
or plug-ins by ``module:attr`` or a ``curteach.curricula`` entry point, whose cells are named by the plug-in's
``name``.
"""

from __future__ import annotations

import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from curteach_envs._util import check_int, check_positive
from curteach_envs.car import N_TASK_TYPES
from curteach_teaching.curriculum.metrics import EpochMetricMean
from curteach_teaching.names import BC_TEACHER_NAMES
from curteach_teaching.planning import expected_return
from curteach_teaching.registry import PluginError
from curteach_teaching.sweeps.fingerprints import WHEN_NOT_DEFAULT, setting, shared_settings
from curteach_teaching.sweeps.results import RunResult

__all__ = ["CURVE", "LOSS_CURVE", "CarTrainersExperiment", "cell_name", "split_cell"]

#: The curve of a run: the exact expected reward after each curriculum epoch.
CURVE = "reward"
#: The mean training loss of each curriculum epoch (NaN at 0; BC's and DAgger's BC loss, GAIL's and AIRL's
#: discriminator loss; MCE-IRL has none and its runs lack the curve; so do runs saved before it was recorded).
LOSS_CURVE = "train:loss"
#: The curricula in the order of the paper's Fig. 4 legend.
CURRICULA = BC_TEACHER_NAMES


def cell_name(trainer: str, curriculum: str) -> str:
    """The cell of ``trainer`` taught with ``curriculum``: ``"trainer_curriculum"``."""
    return f"{trainer}_{curriculum}"


def split_cell(cell: str) -> tuple[str, str]:
    """``(trainer, curriculum)`` of a :func:`cell_name`."""
    trainer, _, curriculum = cell.rpartition("_")
    return trainer, curriculum


def _names(what: str, names, allowed: tuple | None) -> tuple:
    names = tuple(name.strip() for name in (names.split(",") if isinstance(names, str) else names) if name.strip())
    if not names:
        raise ValueError(f"{what} must name at least one")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{what} must be distinct; {', '.join(repeated)} appear(s) twice")
    if allowed is not None:
        unknown = [name for name in names if name not in allowed]
        if unknown:
            raise ValueError(f"{what} must be among {', '.join(allowed)}; got {', '.join(unknown)}")
    return names


def _call_recipe(recipe, trainer: str, curriculum: str, plugin: bool, setup, spec, seed_sequence, loss):
    """``recipe(setup, spec, seed_sequence, callbacks=[loss])``; a plug-in trainer's own exception is a
    :class:`~curteach_teaching.registry.PluginError` naming it (a built-in's stays a bug with its traceback)."""
    try:
        return recipe(setup, spec, seed_sequence, callbacks=[loss])
    except PluginError:  # e.g. a plug-in curriculum that the recipe called: named already
        raise
    except Exception as error:
        if not plugin:
            raise
        raise PluginError(f"car trainer {trainer!r} raised {type(error).__name__} with curriculum {curriculum!r}: "
                          f"{error}", traceback.format_exc()) from error


@dataclass(frozen=True)
class CarTrainersExperiment:
    """Settings of the car trainers experiment; :meth:`run_cell` performs one run of one cell.

    Attributes:
        trainers: car trainers (:data:`~curteach_teaching.experiments.car.recipes.CAR_TRAINERS`: bc, dagger, gail,
            airl, mce-irl, or
            plug-in recipes by ``module:attr`` or entry point), with distinct names, in figure order.
        curricula: Agn, Cur, Cur-T, Cur-L or plug-in curricula (``module:attr``, entry points), with distinct names
            without ``_``.
        init_types: pre-training task types (``--init T0`` = 1, as car-bc).
        steps: curriculum epochs per run (BC epochs, DAgger rounds, adversarial rounds, MCE-IRL teaching steps).
        learning_rate, pretrain_sweeps, n_per_start, demo_length, gamma: car-bc's (the BC learner and the pool).
        dagger_episodes: expert-labelled episodes DAgger collects per round.
        adversarial_timesteps: generator (PPO) time steps per adversarial round.
        disc_updates: discriminator updates per adversarial round (imitation's ``n_disc_updates_per_round``).
        match_starts: GAIL's and AIRL's generator episodes start where the epoch's demonstrations start
            (:class:`~curteach_teaching.curriculum.adapters.adversarial.CurriculumAdversarial`'s ``match_starts``).
        generator_learning_rate: PPO's Adam step size.
        mce_iterations: MCE-IRL reward steps per teaching step; mce_learning_rate: its Adam step size.
        pretrain_iterations: MCE-IRL reward steps on the pre-training starts before teaching.
        device: ``"cpu"`` or ``"cuda"`` (resolve ``"auto"`` with
            :func:`~curteach_teaching.sweeps.devices.sweep_device` first): where every network of a run (policies,
            reward nets, PPO) trains; a run takes the GPU its worker is given
            (:func:`~curteach_teaching.sweeps.devices.run_device`).
    """

    trainers: tuple = ("bc", "dagger", "gail", "airl", "mce-irl")
    curricula: tuple = CURRICULA
    init_types: int = 1
    steps: int = 10
    learning_rate: float = 0.01
    pretrain_sweeps: int = 1000
    n_per_start: int = 10
    demo_length: int = 10
    gamma: float = 0.999
    dagger_episodes: int = 10
    adversarial_timesteps: int = 200
    generator_learning_rate: float = 0.05
    mce_iterations: int = 5
    mce_learning_rate: float = 0.05
    pretrain_iterations: int = 20
    # added after runs were saved, with defaults that reproduce them: left out of the fingerprint at those defaults.
    # The device among them: every run saved before it was computed on the CPU, and a GPU's numbers may differ in the
    # last bits, so CPU runs keep their fingerprint and GPU runs are another sweep's.
    disc_updates: int = setting(2, fingerprint=WHEN_NOT_DEFAULT)
    match_starts: bool = setting(False, fingerprint=WHEN_NOT_DEFAULT)
    device: str = setting("cpu", fingerprint=WHEN_NOT_DEFAULT)

    def __post_init__(self):
        trainers = _names("trainers", self.trainers, None)
        self.trainer_recipes(trainers)  # an unknown or repeated name: the registry's error
        object.__setattr__(self, "trainers", trainers)  # a '_' is fine: a cell is split at its last one
        curricula = _names("curricula", self.curricula, None)
        names = list(self.curriculum_specs(curricula))  # a plug-in that does not load fails here
        if any("_" in name for name in names):
            raise ValueError(f"curriculum names must not contain '_' (cells are named trainer_curriculum); got {names}")
        object.__setattr__(self, "curricula", curricula)
        check_int("init_types", self.init_types, 0, N_TASK_TYPES)
        check_int("steps", self.steps, 1, 10_000)
        for name in ("n_per_start", "demo_length", "dagger_episodes", "adversarial_timesteps", "mce_iterations",
                     "disc_updates"):
            check_int(name, getattr(self, name), 1, 1_000_000)
        check_int("pretrain_sweeps", self.pretrain_sweeps, 0)
        check_int("pretrain_iterations", self.pretrain_iterations, 0)
        if not isinstance(self.match_starts, bool):
            raise ValueError(f"match_starts must be True or False; got {self.match_starts!r}")
        for name in ("learning_rate", "generator_learning_rate", "mce_learning_rate"):
            check_positive(name, getattr(self, name))
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda' (resolve 'auto' first); got {self.device!r}")

    @staticmethod
    def trainer_recipes(trainers) -> dict:
        """``trainer name -> recipe`` of ``trainers`` (a built-in by its name; a plug-in by its ``name``, else the
        attribute's or entry point's name), each checked to be callable."""
        from curteach_teaching.experiments.car.recipes import CAR_TRAINERS

        loaded = CAR_TRAINERS.load_many(trainers)  # refuses unknown names and repeated display names
        for spec, (_, recipe) in zip(trainers, loaded, strict=True):
            if not callable(recipe):
                raise ValueError(f"car trainer {spec!r} is not callable (got {type(recipe).__name__}); a car trainer "
                                 "is a recipe(setup, curriculum, seed_sequence, *, callbacks) -> rewards")
        return dict(loaded)

    @property
    def trainer_names(self) -> tuple:
        """The trainers' names, as in the cells and figures."""
        return tuple(self.trainer_recipes(self.trainers))

    @staticmethod
    def curriculum_specs(curricula) -> dict:
        """``curriculum name -> spec`` of ``curricula`` (the same for the built-ins; a plug-in by its ``name``)."""
        from curteach_teaching.curriculum.selection import check_variant, variant_name

        specs = {}
        for spec in curricula:
            name = variant_name(check_variant(spec))
            if name in specs:  # two specs of one curriculum would share its cells
                raise ValueError(f"curricula must have distinct names; {specs[name]!r} and {spec!r} are both {name!r}")
            specs[name] = spec
        return specs

    @property
    def curriculum_names(self) -> tuple:
        """The curricula's names, as in the cells and figures."""
        return tuple(self.curriculum_specs(self.curricula))

    @property
    def cells(self) -> tuple:
        """Every ``trainer x curriculum`` cell, trainer-major."""
        return tuple(cell_name(t, c) for t in self.trainer_names for c in self.curriculum_names)

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files). A setting added after runs were saved is
        recorded only when it differs from its default, so those runs stay valid."""
        data = shared_settings(self)
        data["trainers"], data["curricula"] = list(self.trainers), list(self.curricula)
        data["experiment"] = "car-trainers"
        return data

    def setup(self, seed_sequence: np.random.SeedSequence, device: str | None = None):
        """The run's :class:`~curteach_teaching.experiments.car.recipes.CarSetup` (car-bc's road, expert,
        pool and pre-trained learner for the same seed sequence) on ``device`` (``"cpu"``, ``"cuda:0"``, ...;
        default this process's for :attr:`device`, :func:`~curteach_teaching.sweeps.devices.run_device`)."""
        from curteach_teaching.experiments.car.bc import CarBCExperiment, pretraining_starts
        from curteach_teaching.experiments.car.recipes import CarSetup

        if device is None:
            from curteach_teaching.sweeps.devices import run_device

            device = run_device(self.device)
        bc = CarBCExperiment(init_types=self.init_types, steps=1, learning_rate=self.learning_rate,
                             pretrain_sweeps=self.pretrain_sweeps, n_per_start=self.n_per_start,
                             demo_length=self.demo_length, gamma=self.gamma, device=self.device)
        mdp, expert, pool, learner, _ = bc.build(seed_sequence, device)
        init_starts = pretraining_starts(pool.start_states, mdp.task_of_state, self.init_types)
        return CarSetup(mdp=mdp, expert=expert, demonstrations=pool.all_trajectories(),
                        init_demonstrations=[t for k in init_starts for t in pool.trajectories(int(k))],
                        theta=learner.theta, settings=self, device=device)

    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of ``cell`` (see the module docstring)."""
        if cell not in self.cells:
            raise ValueError(f"unknown cell {cell!r}; cells: {', '.join(self.cells)}")
        trainer, curriculum = split_cell(cell)
        from curteach_teaching.sweeps.devices import run_device

        try:
            device = run_device(self.device)  # "cuda" -> this worker's GPU
        except ValueError as error:
            raise ValueError(f"run {index} of {cell} {error}") from None
        setup = self.setup(seed_sequence, device)
        trainer_seed = seed_sequence.spawn(1)[0]
        from threadpoolctl import threadpool_limits  # in the teaching extra

        # one BLAS thread: MCE-IRL's occupancy products are ~15x slower with OpenBLAS's threads on a loaded machine
        with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
            # imitation's BC logger calls float() on tensors that require grad (harmless)
            warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
            warnings.filterwarnings("ignore", message="tried to wrap")  # DAgger's collector: state-index observations
            spec = self.curriculum_specs(self.curricula)[curriculum]
            loss = EpochMetricMean("loss")
            from curteach_teaching.experiments.car.recipes import CAR_TRAINERS  # imports torch: only in a run

            recipes = self.trainer_recipes(self.trainers)
            plugin = not CAR_TRAINERS.is_builtin(dict(zip(recipes, self.trainers, strict=True))[trainer])
            returned = _call_recipe(recipes[trainer], trainer, curriculum, plugin, setup, spec, trainer_seed, loss)
        try:
            curve = np.asarray(returned, dtype=np.float64)
            what = f"a curve of shape {curve.shape}"
        except (TypeError, ValueError):
            curve, what = None, f"{type(returned).__name__}, not numbers"
        if curve is None or curve.shape != (self.steps + 1,):
            raise PluginError.here(f"car trainer {trainer!r} returned {what}; a recipe returns the expected reward "
                                   f"before teaching and after each of the {self.steps} steps, ({self.steps + 1},)")
        curves = {CURVE: curve}
        if np.isfinite(loss.per_epoch).any():  # a trainer with a training loss (MCE-IRL has none)
            curves[LOSS_CURVE] = np.array([np.nan, *loss.per_epoch], dtype=np.float64)
        extras = {"expert_reward": float(expected_return(setup.mdp, setup.expert.policy)),
                  "initial_reward": float(curve[0]), "final_reward": float(curve[-1])}
        return RunResult(index=index, seed=0, curves=curves, extras=extras, cell=cell)
