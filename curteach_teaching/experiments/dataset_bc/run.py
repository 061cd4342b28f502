"""One run of ``dataset-bc``: the pool, the policy, imitation's ``BC`` through ``CurriculumBC``, and the seeded
evaluations every ``eval_every`` optimizer steps.

A run's :class:`~curteach_teaching.sweeps.results.RunResult` holds, at each evaluation point (``K`` of them, the
first before training):

* ``records["batches"]["return"]``: ``(K,)`` the optimizer steps taken;
* ``curves["return"]``, ``curves["success"]``, ``curves["length"]``: ``(K,)`` the greedy policy's mean return,
  success rate and episode length over every held-out episode of every dataset;
* ``curves["sampled_success"]``: the same success rate with sampled actions (when ``sampled``);
* ``curves["success:<dataset>"]`` (and ``sampled_success:<dataset>``): per dataset, when the pool has several;
* ``curves["train:loss"]``: the mean training loss of the steps since the previous point (NaN at the first);
* ``extras["selected_fraction"]``: the fraction of the pool each epoch trained on; ``extras["diverged"]``: the step
  at which the loss stopped being finite (training stopped there; later points repeat the last evaluation);
* ``extras["selection"]``: what each epoch trained on, one entry per epoch: ``None`` (every episode, unweighted),
  ``{"selected": [pool indices]}`` (order, select) or ``{"weights": (N,) loss weights}`` (weight); ``extras["use"]``
  and ``extras["task"]``: the cell's use and task score.

Held-out reset seeds: per dataset, the integers ``0, 1, 2, ...`` that are not the reset seed of any of its
episodes, the first ``eval_episodes`` of them (BabyAI bot datasets never use seeds below ``2**20``). Every run and
every curriculum is evaluated on the same seeds; sampled actions draw from a generator seeded by the run.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import numpy as np

from curteach_teaching.names import AGN
from curteach_teaching.sweeps.results import RunResult

__all__ = ["held_out_seeds", "load_pool", "pool_digest", "run_once", "success_defined", "task_difficulty_scores"]


@functools.lru_cache(maxsize=2)
def load_pool(sources: tuple, env_id: str | None) -> Any:
    """The pool of ``sources`` (:func:`~curteach_teaching.datasets.read_pool`), read once per process."""
    from curteach_teaching.datasets import read_pool

    return read_pool(list(sources), env_id=env_id)


def pool_digest(pool: Any) -> str:
    """SHA-256 of the pool's groups, seeds, actions, rewards and lengths: what identifies its data in the settings."""
    digest = hashlib.sha256()
    for group, seed, trajectory in zip(pool.groups, pool.seeds, pool.trajectories, strict=True):
        digest.update(f"{group}|{seed}|{len(trajectory.acts)}|".encode())
        digest.update(np.ascontiguousarray(trajectory.acts).tobytes())
        rews = getattr(trajectory, "rews", None)
        if rews is not None:
            digest.update(np.ascontiguousarray(rews, dtype=np.float64).tobytes())
    return digest.hexdigest()


def success_defined(pool: Any) -> bool:
    """Whether an episode's success can be read off its rewards: every episode is rewarded on its last step only
    (as BabyAI's and Minigrid's are). Elsewhere (CartPole rewards every step, its last one too) success is not
    reported."""
    if not pool.has_rewards:
        return False
    return all(not np.any(np.asarray(t.rews)[:-1]) for t in pool.trajectories)


def held_out_seeds(dataset_seeds: Any, n: int) -> np.ndarray:
    """``(n,)`` the first ``n`` of ``0, 1, 2, ...`` that are not among ``dataset_seeds`` (``None`` seeds ignored)."""
    taken = {int(s) for s in dataset_seeds if s is not None}
    seeds, candidate = [], 0
    while len(seeds) < n:
        if candidate not in taken:
            seeds.append(candidate)
        candidate += 1
    return np.asarray(seeds, dtype=np.int64)


def group_order(pool: Any) -> list[str]:
    """The pool's datasets in the order given (the ladder)."""
    return list(dict.fromkeys(pool.groups))


def task_difficulty_scores(pool: Any, spec: str) -> np.ndarray:
    """``(N,)`` the task difficulty of every episode, larger = harder: ``level`` (the dataset's rank on the ladder,
    1-based), ``return`` (minus the episode's return: a better demonstration is an easier one, as curation ranks
    them) or :func:`~curteach_teaching.datasets.task_scores` of ``spec`` (``length``, a field, ``module:attr``)."""
    if spec == "return":
        from curteach_teaching.datasets import task_scores

        return -np.asarray(task_scores(pool, spec), dtype=np.float64)
    if spec == "level":
        rank = {group: i + 1 for i, group in enumerate(group_order(pool))}
        return np.asarray([rank[g] for g in pool.groups], dtype=np.float64)
    from curteach_teaching.datasets import task_scores

    return np.asarray(task_scores(pool, spec), dtype=np.float64)


class _Evaluations:
    """The evaluation points of one run (a curriculum callback every ``eval_every`` steps)."""

    def __init__(self, experiment: Any, pool: Any, codec: Any, policy: Any, sample_seed: int):
        self.experiment, self.pool, self.codec, self.policy = experiment, pool, codec, policy
        self.groups = group_order(pool)
        groups = np.asarray(pool.groups)
        self.seeds = {g: held_out_seeds(np.asarray(pool.seeds, dtype=object)[groups == g], experiment.eval_episodes)
                      for g in self.groups}
        self.sample_seed = sample_seed
        self.curves: dict[str, list[float]] = {}
        self.batches: list[int] = []
        self.losses: list[float] = []

    def loss_of(self, batch: Any) -> None:
        if "loss" in batch.metrics:
            self.losses.append(float(batch.metrics["loss"]))

    def __call__(self, step: int) -> None:
        from curteach_teaching.experiments.dataset_bc.rollouts import evaluate_policy

        point: dict[str, float] = {}
        modes = [("", True)] + ([("sampled_", False)] if self.experiment.sampled else [])
        for prefix, greedy in modes:
            outcomes = []
            for group in self.groups:
                result = evaluate_policy(self.policy, lambda g=group: self.codec.wrap_env(self.pool.make_env(g)),
                                         self.seeds[group], deterministic=greedy,
                                         generator=None if greedy else self.sample_seed + step)
                outcomes.append(result)
                if len(self.groups) > 1:
                    point[f"{prefix}success:{group}"] = result.success_rate
            successes = np.concatenate([r.successes for r in outcomes])
            point[f"{prefix}success"] = float(successes.mean())
            if greedy:
                point["return"] = float(np.concatenate([r.returns for r in outcomes]).mean())
                point["length"] = float(np.concatenate([r.lengths for r in outcomes]).mean())
        point["train:loss"] = float(np.mean(self.losses)) if self.losses else float("nan")
        self.losses = []
        self.record(step, point)

    def record(self, step: int, point: dict) -> None:
        self.batches.append(int(step))
        for name, value in point.items():
            self.curves.setdefault(name, []).append(value)


def run_once(experiment: Any, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
    """Run ``index`` of curriculum ``cell`` of ``experiment`` (see the module docstring)."""
    import torch as th
    from imitation.algorithms.bc import BC

    from curteach_teaching.curriculum.adapters.bc import CurriculumBC
    from curteach_teaching.curriculum.callbacks import CurriculumCallback, EveryNSteps
    from curteach_teaching.curriculum.pacing import LinearPacing
    from curteach_teaching.curriculum.selection import check_variant
    from curteach_teaching.experiments.dataset_bc.observations import codec_for
    from curteach_teaching.experiments.dataset_bc.policies import make_policy
    from curteach_teaching.experiments.dataset_bc.preference import ScaledPreference
    from curteach_teaching.learners.quiet_logger import silent_logger
    from curteach_teaching.sweeps.devices import run_device

    pool = load_pool(experiment.sources, experiment.env_id)
    codec = codec_for(pool.observation_space)
    trajectories = codec.trajectories(pool.trajectories)
    lengths = np.asarray([len(t.acts) for t in trajectories], dtype=np.float64)
    spec = experiment.cell_spec(cell)
    variant = check_variant(spec.curriculum)
    if isinstance(variant, str) and variant != AGN:
        variant = ScaledPreference(variant, lengths, learner=experiment.learner_term, scale=experiment.scale)
    needs_teacher = getattr(variant, "needs_teacher", True) if not isinstance(variant, str) else False
    teacher = experiment.teacher_scores(pool, spec.task, trajectories, codec) if needs_teacher else None

    net_seed, batch_seed, sample_seed = (int(s.generate_state(1)[0]) for s in seed_sequence.spawn(3))
    device = run_device(experiment.device)  # the runner's: "cuda" -> this worker's GPU
    policy = make_policy(experiment.policy, codec.observation_space, pool.action_space, net_seed).to(device)
    trainer = BC(observation_space=codec.observation_space, action_space=pool.action_space, policy=policy,
                 rng=np.random.default_rng(batch_seed), batch_size=experiment.batch_size,
                 optimizer_cls=th.optim.Adam, optimizer_kwargs={"lr": experiment.learning_rate},
                 device=device, custom_logger=silent_logger())
    steps_per_epoch, epochs = experiment.schedule(int(lengths.sum()))
    evaluations = _Evaluations(experiment, pool, codec, policy, sample_seed)

    class _Watch(CurriculumCallback):
        diverged_at: int | None = None

        def on_batch(self, batch: Any) -> None:
            evaluations.loss_of(batch)
            loss = batch.metrics.get("loss")
            if loss is not None and not np.isfinite(loss):
                self.diverged_at = batch.step
                raise _Diverged()

    selection: list = []

    class _Record(CurriculumCallback):
        def on_epoch_start(self, plan: Any) -> None:
            chosen = plan.selection
            if chosen.weights is not None:
                selection.append({"weights": np.asarray(chosen.weights, dtype=np.float64).tolist()})
            elif chosen.preference is None:
                selection.append(None)
            else:
                selection.append({"selected": np.sort(chosen.selected).astype(np.int64).tolist()})

    watch = _Watch()
    curriculum = CurriculumBC(trainer, trajectories, variant=variant, teacher=teacher,
                              pacing=LinearPacing(experiment.pacing_a, experiment.pacing_b),
                              rng=np.random.default_rng(batch_seed), steps_per_epoch=steps_per_epoch, log=False,
                              use=experiment.use_of(cell),
                              callbacks=[watch, _Record(),
                                         EveryNSteps(experiment.eval_every, evaluations, at_start=True)])
    extras: dict[str, Any] = {"steps_per_epoch": steps_per_epoch, "epochs": epochs, "use": spec.use,
                              "task": spec.task}
    try:
        curriculum.train(epochs, max_steps=experiment.max_batches)
    except _Diverged:
        extras["diverged"] = watch.diverged_at
    if not evaluations.batches or evaluations.batches[-1] != curriculum.step and "diverged" not in extras:
        evaluations(curriculum.step)  # the last point, when max_batches is no multiple of eval_every
    extras["selected_fraction"] = [float(r.fraction) for r in curriculum.history]
    extras["selection"] = selection[: len(curriculum.history)]
    extras["groups"] = evaluations.groups
    curves = {name: np.asarray(values, dtype=np.float64) for name, values in evaluations.curves.items()}
    return RunResult(index=index, seed=0, cell=cell, curves=curves,
                     records={"batches": {"return": np.asarray(evaluations.batches, dtype=np.int64)}},
                     extras=extras)


class _Diverged(Exception):
    """Raised from a callback to stop a run whose training loss is no longer finite."""
