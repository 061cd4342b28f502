"""Fast batched evaluation on the navigation tasks: greedy rollouts of a whole split at once.

The original (docs/experiments/nav.md, "Fast evaluation") rolls out each datapoint of a split alone: the network's
argmax action, in eval mode, from the task's start pose, until the episode ends or 30 actions have been taken; the
metric is the mean undiscounted return per datapoint. Here every task of the split is stepped together, in one loop
over time: one forward pass per step for all episodes still running, and one call of the navigation wing's batched
rules (:class:`curteach_envs.navigation.TaskBatch`: ``observe`` and ``step``, the code the environments step) for
all of them; finished episodes leave the batch.

The datapoints of a task share its start and map, so a greedy policy gives them the same return:
:func:`evaluate_split` rolls out each task once and gives every datapoint its task's return, which is the
original's per-datapoint mean (tasks with several stored paths count several times).

Cycles: a greedy policy that is a deterministic function of the observation repeats itself forever once an episode
returns to a state (pose and visited goals) it has been in. Such an episode is finished at once with the return it
would collect up to the horizon (``skip_cycles=True``, the default for networks and callables; never for action
tables). This gives the same returns, with far fewer forward passes for policies that turn in place.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_envs._util import CPU_PIECE_ROWS, row_pieces
from curteach_envs.navigation.dynamics import TaskBatch
from curteach_envs.navigation.grid import HORIZON, N_ACTIONS, N_POSES, OBSERVATION_SHAPE

__all__ = ["RolloutResult", "SplitEvaluation", "rollout", "evaluate_split", "NonFiniteLogits"]

_DEFAULT_CHUNK = 4096


# ------------------------------------------------------------------------------------------------------------------
# Policies.


class NonFiniteLogits(ValueError):
    """The policy returned NaN or infinite logits (a diverged network): it chooses no action."""


def _actions_from_output(output: Any, n: int) -> np.ndarray:
    """``(n,)`` int64 actions from a policy's output: ``(n, 3)`` logits (argmax, first on ties) or ``(n,)`` actions."""
    import torch as th

    if isinstance(output, th.Tensor):
        if output.ndim == 2 and output.shape == (n, N_ACTIONS):
            if not bool(th.isfinite(output).all()):
                raise NonFiniteLogits("the policy returned non-finite logits (NaN or inf)")
            output = output.argmax(dim=1)
        output = output.detach().cpu().numpy()
    output = np.asarray(output)
    if output.shape == (n, N_ACTIONS):
        if not np.all(np.isfinite(output)):
            raise NonFiniteLogits("the policy returned non-finite logits (NaN or inf)")
        output = np.argmax(output, axis=1)
    if output.shape != (n,):
        raise ValueError(f"the policy must return (n, 3) logits or (n,) actions for n = {n} observations; "
                         f"got shape {output.shape}")
    if output.dtype.kind == "f":
        if not np.all(output == np.round(output)):
            raise ValueError("the policy returned non-integer actions")
    elif output.dtype.kind not in "iu":
        raise ValueError(f"the policy returned actions of dtype {output.dtype}; expected integers")
    actions = output.astype(np.int64)
    if actions.size and (actions.min() < 0 or actions.max() >= N_ACTIONS):
        raise ValueError("the policy returned actions outside {0, 1, 2}")
    return actions


class _Greedy:
    """A policy as ``(n, 7, 6, 6)`` float32 observations -> ``(n,)`` actions, chunk by chunk; a torch module (a
    network giving logits, or an SB3 policy) runs greedily in eval mode (restored on exit), without gradients."""

    def __init__(self, policy: Any, device: Any, chunk_size: int):
        import torch as th
        from stable_baselines3.common.policies import BasePolicy

        self.th, self.chunk_size, self.forward, self.module = th, chunk_size, policy, None
        self.pieces = None
        if isinstance(policy, th.nn.Module):
            self.module = policy
            if device is None:
                parameter = next(iter(policy.parameters()), None)
                device = parameter.device if parameter is not None else th.device("cpu")
            self.device = th.device(device)
            if hasattr(policy, "action_logits"):
                self.forward = policy.action_logits
            elif isinstance(policy, BasePolicy):
                self.forward = lambda x: policy._predict(x, deterministic=True)
            # on the CPU, a chunk in cache-sized pieces of 1024-2047 rows: 20% less time, the same actions
            self.pieces = CPU_PIECE_ROWS if self.device.type == "cpu" else None

    def __enter__(self) -> _Greedy:
        if self.module is not None:
            self.was_training = self.module.training
            self.module.train(False)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.module is not None:
            self.module.train(self.was_training)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        out = np.empty(obs.shape[0], dtype=np.int64)
        with self.th.inference_mode() if self.module is not None else nullcontext():
            for begin in range(0, obs.shape[0], self.chunk_size):
                for start, stop in row_pieces(begin, min(obs.shape[0], begin + self.chunk_size), self.pieces):
                    chunk = obs[start:stop]
                    if self.module is not None:
                        chunk = self.th.from_numpy(chunk).to(self.device)
                    out[start:stop] = _actions_from_output(self.forward(chunk), stop - start)
        return out


def _action_table(policy: Any, B: int) -> np.ndarray | None:
    """``(B, L)`` int64 table padded with -1 if ``policy`` is an action table, else ``None``."""
    if callable(policy):
        return None
    if isinstance(policy, np.ndarray) and policy.ndim == 2:
        table = policy
    elif isinstance(policy, (list, tuple)):
        sequences = [np.asarray(s) for s in policy]
        if any(s.ndim != 1 for s in sequences):
            raise ValueError("an action table given as a list must hold 1-d action sequences")
        table = np.full((len(sequences), max((s.size for s in sequences), default=0)), -1, dtype=np.int64)
        for i, s in enumerate(sequences):
            if s.size and not np.issubdtype(s.dtype, np.integer):
                raise ValueError(f"action sequence {i} must hold integers; got dtype {s.dtype}")
            table[i, : s.size] = s
    else:
        raise ValueError("policy must be a torch module, a callable on (n, 7, 6, 6) observations, or an action table "
                         f"((B, L) integer array or list of B sequences); got {type(policy).__name__}")
    if table.shape[0] != B or not np.issubdtype(table.dtype, np.integer):
        raise ValueError(f"an action table must be an integer array with one row per episode ({B}); got shape "
                         f"{table.shape} and dtype {table.dtype}")
    if table.size and (table.min() < -1 or table.max() >= N_ACTIONS):
        raise ValueError("an action table must hold actions in {0, 1, 2} (or -1 after a sequence's end)")
    return table.astype(np.int64)


# ------------------------------------------------------------------------------------------------------------------
# Rollouts.


@dataclass(frozen=True)
class RolloutResult:
    """Outcome of :func:`rollout`, one row per episode.

    Attributes:
        returns: ``(B,)`` int64 undiscounted returns.
        lengths: ``(B,)`` int64 actions taken (the horizon for an episode cut by it, also when a cycle was skipped).
        terminated: ``(B,)`` bool, the episode ended by the task's rules (goal, bomb, tour, leaving the grid).
        actions: ``(B, H)`` int8 actions, -1 after the end (``record=True`` only, else ``None``).
        rewards: ``(B, H)`` int64 per-step rewards, 0 after the end (``record=True``).
        observations: ``(B, H + 1, 7, 6, 6)`` float32, the observation before each action and the one after the
            last (as the environment returns them), zeros after the end (``record=True``).
    """

    returns: np.ndarray
    lengths: np.ndarray
    terminated: np.ndarray
    actions: np.ndarray | None = None
    rewards: np.ndarray | None = None
    observations: np.ndarray | None = None

    @property
    def mean_return(self) -> float:
        """Mean return over the episodes."""
        return float(self.returns.mean())


def rollout(
    policy: Any,
    batch: TaskBatch,
    *,
    horizon: int = HORIZON,
    device: Any = None,
    skip_cycles: bool = True,
    record: bool = False,
    chunk_size: int = _DEFAULT_CHUNK,
) -> RolloutResult:
    """Roll out every episode of ``batch`` together, in one loop over time.

    At each step the episodes still running are observed (``(A, 7, 6, 6)``), the policy gives one action each, and
    the environment's rules step them all (see the module docstring); an episode leaves the batch when it
    terminates or after ``horizon`` actions.

    Args:
        policy: one of
            * a torch ``nn.Module``: a network mapping ``(n, 7, 6, 6)`` float32 observations to ``(n, 3)`` logits,
              a module with ``action_logits(obs)`` (``NavigationCNNPolicy``), or any SB3 policy (its
              deterministic ``_predict``). It runs in eval mode (its mode is restored afterwards), without
              gradients, on ``device`` (default: the device of its parameters); the action is the argmax of the
              logits, the first on ties;
            * a callable taking ``(n, 7, 6, 6)`` float32 NumPy observations and returning ``(n, 3)`` logits or
              ``(n,)`` actions (NumPy arrays or torch tensors);
            * an action table: a ``(B, L)`` integer array or a list of ``B`` action sequences; episode ``b`` takes
              ``table[b, t]`` at step ``t`` and stops (truncated) where its sequence ends (-1 or column ``L``).
        batch: the tasks, one row per episode.
        horizon: the most actions per episode (30, the original's evaluation horizon).
        device: where the observations are sent for a torch policy, which must live there (default: the device of
            its parameters).
        skip_cycles: finish an episode as soon as it returns to a state it has visited (its return up to the horizon
            follows exactly from the cycle). Valid when the policy is a deterministic function of the observation,
            as a greedy network in eval mode is; pass ``False`` otherwise. Ignored for action tables and with
            ``record=True``.
        record: also return the actions, rewards and observations of every step.
        chunk_size: most observations per chunk, one forward pass each (a torch module on the CPU: in pieces of
            1024-2047 rows, with the same actions; ``curteach_envs._util.row_pieces``).

    Returns:
        :class:`RolloutResult`.

    Raises:
        ValueError: a bad batch, horizon, chunk size or policy, or a policy output that is not one valid action
            (or 3 finite logits) per observation.
    """
    if not isinstance(batch, TaskBatch):
        raise ValueError(f"batch must be a TaskBatch; got {type(batch).__name__}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer; got {horizon!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer; got {chunk_size!r}")
    horizon, B = int(horizon), len(batch)
    table = _action_table(policy, B)
    skip = bool(skip_cycles) and table is None and not record
    pose = batch.start_pose.copy()
    mask = np.zeros(B, dtype=np.int64)
    returns = np.zeros(B, dtype=np.int64)
    lengths = np.zeros(B, dtype=np.int64)
    terminated = np.zeros(B, dtype=bool)
    if record:
        actions_log = np.full((B, horizon), -1, dtype=np.int8)
        rewards_log = np.zeros((B, horizon), dtype=np.int64)
        obs_log = np.zeros((B, horizon + 1) + OBSERVATION_SHAPE, dtype=np.float32)
    if skip:  # visited states and the return so far, per step
        history = np.full((B, horizon + 1), -1, dtype=np.int64)
        cumulative = np.zeros((B, horizon + 1), dtype=np.int64)
        history[:, 0] = pose
    active = np.arange(B)
    runner = None if table is not None else _Greedy(policy, device, int(chunk_size))
    with runner if runner is not None else nullcontext():
        for t in range(horizon):
            if active.size == 0:
                break
            if table is not None:
                if t >= table.shape[1]:
                    break
                action = table[active, t]
                going = action >= 0
                active, action = active[going], action[going]
                if active.size == 0:
                    break
                if record:
                    obs_log[active, t] = batch.observe(pose[active], mask[active], rows=active, check=False)
            else:
                obs = batch.observe(pose[active], mask[active], rows=active, check=False)
                if record:
                    obs_log[active, t] = obs
                action = runner(obs)
            # the states come from step itself and the actions are checked: no per-step validation
            new_pose, new_mask, reward, done = batch.step(pose[active], mask[active], action, rows=active, check=False)
            pose[active], mask[active] = new_pose, new_mask
            returns[active] += reward
            lengths[active] += 1
            terminated[active] = done
            if record:
                actions_log[active, t] = action
                rewards_log[active, t] = reward
                obs_log[active, t + 1] = batch.observe(new_pose, new_mask, rows=active, check=False)
            keep = ~done
            if skip and t + 1 < horizon:
                state = mask[active] * N_POSES + np.maximum(pose[active], 0)
                history[active, t + 1] = np.where(done, -1, state)
                cumulative[active, t + 1] = returns[active]
                seen = (history[active, : t + 1] == state[:, None]) & keep[:, None]
                cycled = np.flatnonzero(seen.any(axis=1))
                if cycled.size:
                    rows = active[cycled]
                    first = seen[cycled].argmax(axis=1)  # the earlier visit of this state
                    period = t + 1 - first
                    gain = cumulative[rows, t + 1] - cumulative[rows, first]
                    full, rest = np.divmod(horizon - (t + 1), period)
                    returns[rows] += full * gain + cumulative[rows, first + rest] - cumulative[rows, first]
                    lengths[rows] = horizon
                    keep[cycled] = False
            active = active[keep]
    return RolloutResult(
        returns=returns,
        lengths=lengths,
        terminated=terminated,
        actions=actions_log if record else None,
        rewards=rewards_log if record else None,
        observations=obs_log if record else None,
    )


# ------------------------------------------------------------------------------------------------------------------
# Split evaluation.


@dataclass(frozen=True)
class SplitEvaluation:
    """Outcome of :func:`evaluate_split`.

    Attributes:
        mean_return: the metric, the mean return per datapoint (the original's ``total_reward / len(dataset)``).
        returns: ``(N,)`` int64 return of each datapoint (its task's return).
        task_returns: ``(T,)`` int64 return of each task.
        task_lengths: ``(T,)`` actions per task's episode; task_terminated: ``(T,)`` bool.
    """

    mean_return: float
    returns: np.ndarray
    task_returns: np.ndarray
    task_lengths: np.ndarray
    task_terminated: np.ndarray


def evaluate_split(
    policy: Any,
    split: Any,
    *,
    horizon: int = HORIZON,
    device: Any = None,
    skip_cycles: bool = True,
    chunk_size: int = _DEFAULT_CHUNK,
    batch: TaskBatch | None = None,
) -> SplitEvaluation:
    """The original's metric on a split: greedy rollouts of every task, mean return per datapoint.

    Each task is rolled out once (its datapoints share the start and the map, so a greedy policy gives them the
    same return) and each datapoint gets its task's return.

    Args:
        policy: a torch module or a callable, as for :func:`rollout` (an action table is not accepted here: use
            :func:`rollout`).
        split: a ``NavigationSplit`` (``dataset["test"]``).
        horizon, device, skip_cycles, chunk_size: as for :func:`rollout`.
        batch: ``TaskBatch.from_split(split)``, when the caller keeps it to evaluate the split repeatedly.

    Returns:
        :class:`SplitEvaluation`.

    Raises:
        ValueError: an empty split, an action table, or a problem that :func:`rollout` reports.
    """
    if not callable(policy):
        raise ValueError("evaluate_split needs a policy that acts on observations (a torch module or a callable); "
                         f"got {type(policy).__name__}; roll out action tables with rollout()")
    if batch is None:
        batch = TaskBatch.from_split(split, per="task")
    elif not isinstance(batch, TaskBatch) or len(batch) != split.n_tasks or batch.kind != split.kind:
        raise ValueError(f"batch must be TaskBatch.from_split(split) ({split.n_tasks} {split.kind} tasks)")
    result = rollout(policy, batch, horizon=horizon, device=device, skip_cycles=skip_cycles, chunk_size=chunk_size)
    returns = result.returns[np.asarray(split.columns["task_index"], dtype=np.int64)]
    return SplitEvaluation(
        mean_return=float(returns.mean()),
        returns=returns,
        task_returns=result.returns,
        task_lengths=result.lengths,
        task_terminated=result.terminated,
    )

