"""The one policy CUPID's offline baselines read (Agia et al., 2025, arXiv 2506.19121): a learner of ``--policy``
trained on every demonstration, and what it says of each demonstrated step.

``policy-loss``, ``action-likelihood`` and ``action-variance``
(:mod:`~curteach_teaching.datasets.scores.policy_loss`, :mod:`~curteach_teaching.datasets.scores.action_likelihood`,
:mod:`~curteach_teaching.datasets.scores.action_variance`) are three readings of the same trained policy; this module
trains it once and computes, per step ``t`` of the pool:

* ``log_likelihood[t]``: the learner's own per-step score of the demonstrated action
  (:meth:`~curteach_teaching.learners.dataset_learner.DatasetLearner.log_likelihood`: ``log pi(a_t | s_t)`` for BC,
  minus the denoising loss averaged over the learner's seeded (timestep, noise) pairs for ``diffusion``);
* from ``M`` actions sampled at ``s_t`` (:meth:`~curteach_teaching.learners.dataset_learner.DatasetLearner.act`, row
  ``t`` drawing from its own seeded NumPy stream, so a step's samples never depend on the others):
  ``spread[t]``, their variance over the samples averaged over the action's dimensions (CUPID's; for discrete
  actions, ``1 -`` the share of the most frequent sampled action), and ``log_density[t]``, the log-density of the
  demonstrated action under a Gaussian kernel density estimate on the samples, bandwidth ``h`` (CUPID's
  ``batch_kde_log_likelihood``, ``log (1/M) sum_m N(a_t; x_m, h^2 I)``; for discrete actions the add-one smoothed
  share of samples equal to ``a_t``: ``log ((c_t + 1) / (M + n))`` over ``n`` actions).

A learner that reads windows (``bc-rnn``: :mod:`~curteach_teaching.learners.windows`) is asked both at each step's
window ``(W, *obs_shape)`` within its demonstration, never at the bare observation: its log-likelihoods by
:func:`~curteach_teaching.learners.windows.step_log_likelihoods` (the chunked call the ensemble makes), its samples
from its ``act`` on the windows.

The policy: a fresh learner from the factory (``learner(net_seed, rng=..., batch_size=..., learning_rate=...)``),
trained by the curricula's adapter (Agn, ``steps`` optimizer steps over all demonstrations), its seeds from
``SeedSequence([seed, POLICY_TAG])``. Each output is cached in the caller's folder: ``policy-<key>.npz`` (the
log-likelihoods) keyed by the steps, batch size, learning rate, seed, data digest and label; ``policy-spread-<key>``
keyed also by ``M``, and
``policy-density-<key>`` by ``M`` and ``h``. The last trained learner is kept in memory under its key, with the
samples drawn from it (by :mod:`~curteach_teaching.datasets.scores.policy_samples`, one forward pass per chunk where
the learner acts through the action seam), so a second score of the same fit call (``rank --score
policy-loss+action-variance``, ``rank --compare``, a sweep with several cells) reads the same policy and the same
samples without training or sampling again; where they are not in memory and its outputs are not cached, it is
trained again, to the same weights (the training is seeded), and the samples are drawn again, to the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.datasets.scores.npz_cache import cache_path, read_arrays, write_arrays
from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore
from curteach_teaching.learners.windows import episode_windows, learner_window, step_log_likelihoods

__all__ = ["ACTION_SAMPLES", "BANDWIDTH", "DEFAULT_STEPS", "POLICY_STEPS", "FittedPolicy", "PolicyScore",
           "kde_log_density", "per_demonstration_mean", "sample_statistics"]

#: optimizer steps where neither ``policy_steps`` nor the caller's ``max_batches`` says (``rank``), as the ensemble's
DEFAULT_STEPS = 500
#: what seeds the policy's weights and batches, apart from the ensemble's members (``[seed, k, 1]``)
POLICY_TAG = 0x706F6C

POLICY_STEPS = ScoreOption("policy_steps", int, None, "scores policy-loss, action-likelihood, action-variance: "
                           "optimizer steps of their one policy trained on every demonstration (default: "
                           f"dataset-bc's --max-batches; rank: {DEFAULT_STEPS})")
ACTION_SAMPLES = ScoreOption("action_samples", int, 16, "scores action-likelihood, action-variance: actions sampled "
                             "from the policy at each demonstrated state (default 16)")
BANDWIDTH = ScoreOption("likelihood_bandwidth", float, 1.0, "score action-likelihood: the Gaussian kernel's "
                        "bandwidth over the sampled actions, in the actions' units (default 1.0, CUPID's)")

# The last trained learner by its cache key, as (learner, {M: its (M, T, ...) samples}): a second score of the same
# fit neither trains nor samples again.
_TRAINED: dict = {}


def kde_log_density(samples: np.ndarray, target: np.ndarray, bandwidth: float) -> np.ndarray:
    """``(T,)`` ``log (1/M) sum_m N(target_t; samples_{m,t}, h^2 I)`` of ``samples`` ``(M, T, D)`` and ``target``
    ``(T, D)``: a Gaussian kernel density estimate per step, evaluated at that step's target."""
    from scipy.special import logsumexp

    m, _, d = samples.shape
    squared = ((samples - target[None]) ** 2).sum(axis=2) / bandwidth**2  # (M, T)
    log_kernel = -0.5 * squared - 0.5 * d * np.log(2 * np.pi * bandwidth**2)
    return logsumexp(log_kernel, axis=0) - np.log(m)


def sample_statistics(samples: np.ndarray, acts: np.ndarray, action_space: Any,
                      bandwidth: float) -> tuple[np.ndarray, np.ndarray]:
    """``(spread (T,), log_density (T,))`` of ``samples`` ``(M, T, ...)`` drawn at the states of the demonstrated
    ``acts`` ``(T, ...)`` (see the module docstring; ``action_space``: a ``Discrete`` space is counted, any other
    action is flattened to ``D`` numbers)."""
    from gymnasium import spaces

    m, t = samples.shape[:2]
    if isinstance(action_space, spaces.Discrete):
        picks = samples.reshape(m, t).astype(np.int64) - int(action_space.start)
        n = int(action_space.n)
        counts = np.zeros((t, n), dtype=np.int64)
        np.add.at(counts, (np.tile(np.arange(t), m), picks.reshape(-1)), 1)
        spread = 1.0 - counts.max(axis=1) / m
        demonstrated = np.asarray(acts).reshape(t).astype(np.int64) - int(action_space.start)
        return spread, np.log((counts[np.arange(t), demonstrated] + 1.0) / (m + n))
    flat = samples.reshape(m, t, -1).astype(np.float64)
    spread = flat.var(axis=0).mean(axis=1)
    return spread, kde_log_density(flat, np.asarray(acts, dtype=np.float64).reshape(t, -1), bandwidth)


def per_demonstration_mean(per_step: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(N,)`` the mean of ``per_step`` ``(T,)`` over each demonstration's ``lengths[i]`` consecutive steps."""
    episodes = np.repeat(np.arange(len(lengths)), lengths)
    return np.bincount(episodes, weights=per_step, minlength=len(lengths)) / lengths


@dataclass(frozen=True)
class FittedPolicy:
    """The settings of the one policy trained on every demonstration (see the module docstring).

    Args:
        steps: optimizer steps (>= 1); batch_size, learning_rate: the learner's.
        samples: ``M``, actions sampled per state (>= 2); bandwidth: the kernel's ``h`` (> 0).
    """

    steps: int = DEFAULT_STEPS
    batch_size: int = 64
    learning_rate: float = 1e-3
    samples: int = 16
    bandwidth: float = 1.0

    def __post_init__(self) -> None:
        check_int("policy_steps", self.steps, 1)
        check_int("action_samples", self.samples, 2)
        h = self.bandwidth
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not (np.isfinite(h) and h > 0):
            raise ValueError(f"likelihood_bandwidth must be a finite number > 0; got {h!r}")

    def seeds(self, seed: int) -> tuple[int, int]:
        """``(net_seed, batch_seed)`` of the policy trained with ``seed``."""
        net, batch = (int(s.generate_state(1)[0]) for s in np.random.SeedSequence([seed, POLICY_TAG]).spawn(2))
        return net, batch

    def train(self, demonstrations: list, learner: Callable[..., Any], seed: int) -> Any:
        """The learner trained on every demonstration (Agn, :attr:`steps` steps)."""
        from curteach_teaching.curriculum.adapters.learner import learner_curriculum

        net_seed, batch_seed = self.seeds(seed)
        policy = learner(net_seed, rng=np.random.default_rng(batch_seed), batch_size=self.batch_size,
                         learning_rate=self.learning_rate)
        curriculum = learner_curriculum(policy, demonstrations, batch_size=self.batch_size, variant="Agn",
                                        rng=np.random.default_rng(batch_seed), log=False,
                                        steps_per_epoch=self.steps)
        curriculum.train(1)
        return policy

    def _policy(self, key: str, demonstrations: list, learner: Callable[..., Any], seed: int, say) -> Any:
        if key not in _TRAINED:
            if say is not None:
                say(f"policy: one {getattr(learner, 'policy', 'learner')} policy x {self.steps} steps on every "
                    "demonstration")
            trained = self.train(demonstrations, learner, seed)
            _TRAINED.clear()  # one policy at a time in memory
            _TRAINED[key] = (trained, {})
        return _TRAINED[key]

    def outputs(self, demonstrations: list, learner: Callable[..., Any], *, seed: int = 0, cache: Any = None,
                label: str = "", names: tuple = ("log_likelihood",),
                say: Callable[[str], None] | None = None) -> dict:
        """``{name: (T,)}`` of ``names`` (``log_likelihood``, ``spread``, ``log_density``: the module docstring),
        over every step of ``demonstrations`` in order (read from ``cache`` where there, else computed and written).

        Raises:
            ValueError: outputs that are not finite (a diverged policy).
        """
        from imitation.data import rollout

        from curteach_teaching.digests import trajectories_digest

        started = time.perf_counter()
        transitions = rollout.flatten_trajectories(demonstrations)
        t = len(transitions.acts)
        key = {"steps": self.steps, "batch_size": self.batch_size, "learning_rate": self.learning_rate,
               "seed": int(seed), "data": trajectories_digest(demonstrations), "label": label}
        memory = repr(sorted(key.items()))
        every = {"log_likelihood": ("policy", key),  # the spread does not depend on the bandwidth: its own file
                 "spread": ("policy-spread", {**key, "samples": self.samples}),
                 "log_density": ("policy-density", {**key, "samples": self.samples,
                                                    "bandwidth": float(self.bandwidth)})}
        unknown = sorted(set(names) - set(every))
        if unknown:
            raise ValueError(f"no policy output {', '.join(unknown)}; outputs: {', '.join(every)}")
        files = {name: every[name] for name in names}
        found: dict = {}
        drawn: dict = {}
        for name, (prefix, file_key) in files.items():
            path = None if cache is None else cache_path(cache, prefix, file_key)
            if path is not None:
                arrays, problem = read_arrays(path, {name: (t,)})
                if arrays is not None:
                    found.update(arrays)
                    continue
                if problem != "missing" and say is not None:
                    say(f"policy: the cached outputs {path} are damaged ({problem}); computing them again")
            policy, drawn_samples = self._policy(memory, demonstrations, learner, seed, say)
            if name == "log_likelihood":
                values = step_log_likelihoods(policy, transitions.obs, transitions.acts,
                                              [len(d.acts) for d in demonstrations])
            else:
                if not drawn:  # the samples once, for both statistics
                    drawn.update(zip(("spread", "log_density"),
                                     self._sampled(policy, drawn_samples, transitions, learner, seed,
                                                   lengths=[len(d.acts) for d in demonstrations]),
                                     strict=True))
                values = drawn[name]
            if values.shape != (t,) or not np.isfinite(values).all():
                raise ValueError(f"the policy's {name.replace('_', ' ')} is not one finite number per step (did it "
                                 "diverge? try a smaller learning rate)")
            if path is not None:
                write_arrays(path, **{name: values})
            found[name] = values
        if say is not None:
            say(f"policy outputs ready ({time.perf_counter() - started:.0f} s)")
        return found

    def _sampled(self, policy: Any, drawn: dict, transitions: Any, learner: Any, seed: int, *,
                 lengths: Any = ()) -> tuple[np.ndarray, np.ndarray]:
        """``(spread, log_density)`` from :attr:`samples` actions per step
        (:func:`~curteach_teaching.datasets.scores.policy_samples.sampled_actions`: row ``t`` drawing from the
        generator of ``SeedSequence([seed, SAMPLE_TAG, t])`` only, its draws in the samples' order), the samples
        read from ``drawn`` (the policy's in memory, by ``M``) where drawn before, else drawn and kept there; a
        learner reading windows acts on each step's window within its demonstration (``lengths``: ``(N,)`` the
        demonstrations' steps)."""
        from curteach_teaching.datasets.scores.policy_samples import sampled_actions

        if self.samples not in drawn:
            drawn.clear()  # one set of samples at a time in memory
            window = learner_window(policy)
            windows = episode_windows(lengths, window) if window > 1 else None
            drawn[self.samples] = sampled_actions(policy, transitions.obs, len(transitions.acts), self.samples,
                                                  seed, windows=windows)
        space = getattr(learner, "action_space", None)
        space = policy.action_space if space is None else space
        return sample_statistics(drawn[self.samples], transitions.acts, space, self.bandwidth)


class PolicyScore(TrainedScore):
    """The base of the scores that read the one :class:`FittedPolicy`: built from their options and the learner's
    ``batch_size``, ``learning_rate`` and ``max_batches`` (``policy_steps``' default), as the ensemble's score is; a
    subclass says which per-step outputs it reads (:attr:`reads`) and how a demonstration's value follows from
    the per-step outputs (:meth:`reduce`)."""

    reads: tuple = ("log_likelihood",)

    def __init__(self, *, batch_size: int = 64, learning_rate: float = 1e-3, max_batches: int | None = None,
                 **values: Any):
        super().__init__(**values)
        steps = self.values.get("policy_steps")
        if steps is not None:
            check_int("policy_steps", steps, 1)
        self.policy = FittedPolicy(steps=steps if steps is not None else (max_batches or DEFAULT_STEPS),
                                   batch_size=batch_size, learning_rate=learning_rate,
                                   samples=self.values.get("action_samples", ACTION_SAMPLES.default),
                                   bandwidth=self.values.get("likelihood_bandwidth", BANDWIDTH.default))

    @classmethod
    def from_options(cls, options):
        """The score of ``options``' own options and ``batch_size``, ``learning_rate``, ``max_batches`` (each where
        given)."""
        known = (*(option.name for option in cls.options), "batch_size", "learning_rate", "max_batches")
        return cls(**{name: options[name] for name in known if name in options})

    def describe(self) -> dict:
        """The options as given and the policy's ``steps``, ``batch_size`` and ``learning_rate`` (``rank.json``)."""
        p = self.policy
        return {**self.settings(), "steps": p.steps, "batch_size": p.batch_size, "learning_rate": p.learning_rate}

    def reduce(self, outputs: dict, lengths: np.ndarray) -> np.ndarray:
        """``(N,)`` each demonstration's value from the per-step ``outputs`` (:meth:`FittedPolicy.outputs`)."""
        raise NotImplementedError

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` :meth:`reduce` of the policy's outputs on every step of ``data`` (cached in ``cache`` under
        ``label``)."""
        trajectories = list(data.trajectories)
        lengths = np.asarray([len(t.acts) for t in trajectories], dtype=np.int64)
        outputs = self.policy.outputs(trajectories, learner, seed=int(seed), cache=cache, label=label,
                                      names=self.reads, say=say)
        return self.reduce(outputs, lengths)
