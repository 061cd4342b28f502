"""``demo-score`` in the score registry: Demo-SCORE (Chen et al., 2025, arXiv 2503.03707), a classifier of successful
against failed rollouts of a policy trained on every demonstration, read on each demonstration's states. Needs an
environment (``needs_env``): the commands refuse it, in one line, on data without one.

The fit:

1. a fresh learner of ``--policy`` (the factory the fit receives) trained on every demonstration (Agn) for
   ``demo_score_steps`` optimizer steps (``None``: ``dataset-bc``'s ``--max-batches``, ``rank``: 500), in
   ``C = demo_score_checkpoints`` equal stretches of ``ceil(steps / C)`` steps; after each stretch (a checkpoint) it is
   rolled out ``demo_score_rollouts`` episodes in each group's environment
   (:func:`~curteach_teaching.datasets.scores.env_rollouts.roll_out`; reset seeds from ``10**9`` up, disjoint from the
   data's and from ``dataset-bc``'s evaluation: :func:`~curteach_teaching.datasets.scores.env_rollouts.fresh_seeds`),
   acting as ``demo_score_actions`` says: ``greedy`` (the default) as ``dataset-bc``'s evaluator deploys the policy
   (the Gaussian's mean, the diffusion policy's DDIM sample from zero noise; no random numbers drawn), ``sampled``
   with actions drawn from per-episode streams (the behaviour before the option existed);
2. each rollout's outcome: its success where the environment reports one (every rollout of the group had
   ``success``/``is_success`` in its infos: Meta-World, robosuite, Gymnasium-Robotics); elsewhere (CartPole,
   Pendulum, BabyAI) a return strictly above the median return of the group's rollouts (all checkpoints together);
3. a classifier of the rollouts' states (the codec's observations, flattened) labelled by their rollout's outcome,
   trained on the first ``C - 1`` checkpoints' rollouts, its epoch chosen by the lowest binary cross-entropy on the
   last checkpoint's rollouts (:mod:`~curteach_teaching.datasets.scores.success_classifier`);
4. a demonstration's value: ``1 -`` the classifier's mean ``P(success)`` over its states (larger = dropped first).

When the training checkpoints' rollouts are all successes or all failures there is nothing to tell apart: a one-line
error naming the counts (no fallback, since any ranking would then be noise). The values are cached in the caller's
folder as ``demo-score-<key>.npz``, keyed by the options (``demo_score_actions`` only where ``greedy``, so the
caches of sampled rollouts written before the option existed still serve ``sampled``), the policy's steps, batch
size and learning rate, the seed, the data's digest, the environments' ids and the caller's label.
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.datasets.scores.fitted_policy import DEFAULT_STEPS, per_demonstration_mean
from curteach_teaching.datasets.scores.npz_cache import cached_difficulty, write_arrays
from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore

__all__ = ["DemoScore", "rollout_outcomes"]

#: how the rollouts act (``demo_score_actions``)
ACTIONS = ("greedy", "sampled")

#: what seeds the policy's weights, batches and rollouts, apart from the other scores' policies
DEMO_TAG = 0x64656D6F


def rollout_outcomes(groups: list, returns: np.ndarray, successes: np.ndarray, reported: np.ndarray) -> np.ndarray:
    """``(R,)`` bool outcome of ``R`` rollouts (see the module docstring, step 2): per group, the successes where every
    rollout of the group ``reported`` one, else a return above the group's median return."""
    groups = np.asarray(groups, dtype=object)
    returns = np.asarray(returns, dtype=np.float64)
    out = np.asarray(successes, dtype=bool).copy()
    for group in dict.fromkeys(groups.tolist()):
        mine = groups == group
        if not np.asarray(reported, dtype=bool)[mine].all():
            out[mine] = returns[mine] > np.median(returns[mine])
    return out


def _flat(trajectories) -> tuple[np.ndarray, np.ndarray]:
    """``(states (T, D), lengths (N,))`` of objects with ``obs`` and ``acts`` (demonstrations or rollouts)."""
    from curteach_teaching.datasets.scores.deminf import flat_steps

    obs, _, episodes = flat_steps(trajectories)
    return obs, np.bincount(episodes, minlength=len(trajectories))


class DemoScore(TrainedScore):
    """``demo-score``: ``1 -`` a demonstration's mean predicted success under a classifier of rollout outcomes."""

    summary = ("fitted, needs an environment: Demo-SCORE, 1 - a demonstration's mean predicted success under a "
               "classifier of a policy's successful and failed rollouts (Chen et al. 2025)")
    needs_env = True
    options = (ScoreOption("demo_score_steps", int, None, "score demo-score: optimizer steps of its policy trained on "
                           f"every demonstration (default: dataset-bc's --max-batches; rank: {DEFAULT_STEPS})"),
               ScoreOption("demo_score_checkpoints", int, 3, "score demo-score: checkpoints of that policy rolled "
                           "out, the last held out to choose the classifier (>= 2, default 3)"),
               ScoreOption("demo_score_rollouts", int, 10, "score demo-score: rollouts per checkpoint in each "
                           "dataset's environment (default 10)"),
               ScoreOption("demo_score_epochs", int, 50, "score demo-score: the classifier's training epochs, the "
                           "best on the held-out checkpoint kept (default 50)"),
               ScoreOption("demo_score_hidden", int, 32, "score demo-score: the classifier's hidden units (one "
                           "layer, default 32)"),
               ScoreOption("demo_score_actions", str, "greedy", "score demo-score: how its rollouts act: greedy (as "
                           "the evaluator deploys the policy: the Gaussian's mean, the diffusion policy's sample from "
                           "zero noise) or sampled (default greedy)", unkeyed="sampled"))

    def __init__(self, *, batch_size: int = 64, learning_rate: float = 1e-3, max_batches: int | None = None,
                 **values: Any):
        super().__init__(**values)
        v = self.values
        if v["demo_score_steps"] is not None:
            check_int("demo_score_steps", v["demo_score_steps"], 1)
        check_int("demo_score_checkpoints", v["demo_score_checkpoints"], 2)
        for name in ("demo_score_rollouts", "demo_score_epochs", "demo_score_hidden"):
            check_int(name, v[name], 1)
        if v["demo_score_actions"] not in ACTIONS:
            raise ValueError(f"demo_score_actions must be one of {', '.join(ACTIONS)}; got "
                             f"{v['demo_score_actions']!r}")
        self.steps = v["demo_score_steps"] if v["demo_score_steps"] is not None else (max_batches or DEFAULT_STEPS)
        self.batch_size, self.learning_rate = batch_size, learning_rate

    @classmethod
    def from_options(cls, options):
        """The score of ``options``' own options and ``batch_size``, ``learning_rate``, ``max_batches`` (each where
        given)."""
        known = (*(option.name for option in cls.options), "batch_size", "learning_rate", "max_batches")
        return cls(**{name: options[name] for name in known if name in options})

    def describe(self) -> dict:
        """The options (``demo_score_actions`` always) and the policy's ``steps``, ``batch_size`` and
        ``learning_rate`` (``rank.json``)."""
        return {**self.values, "steps": self.steps, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate}

    def rollouts(self, data: Any, learner: Any, seed: int, say=None) -> list[list]:
        """``C`` lists of recorded episodes: the policy's rollouts after each stretch of training (step 1)."""
        from curteach_teaching.curriculum.adapters.learner import learner_curriculum
        from curteach_teaching.curriculum.callbacks import CurriculumCallback
        from curteach_teaching.datasets.scores.env_rollouts import fresh_seeds, roll_out

        checkpoints, per = self.values["demo_score_checkpoints"], self.values["demo_score_rollouts"]
        greedy = self.values["demo_score_actions"] == "greedy"  # greedy: sample_seed is drawn but never read
        net_seed, batch_seed, sample_seed = (int(s.generate_state(1)[0])
                                             for s in np.random.SeedSequence([int(seed), DEMO_TAG]).spawn(3))
        seeds = fresh_seeds(data, checkpoints * per)
        policy = learner(net_seed, rng=np.random.default_rng(batch_seed), batch_size=self.batch_size,
                         learning_rate=self.learning_rate)
        found: list[list] = []

        class _Checkpoint(CurriculumCallback):
            def on_epoch_end(self, record: Any) -> None:
                k = len(found)
                mine = {group: chosen[k * per:(k + 1) * per] for group, chosen in seeds.items()}
                found.append(roll_out(data, policy, mine, greedy=greedy, generator=sample_seed + k))
                if say is not None:
                    done = found[-1]
                    reported = all(e.reported for e in done)
                    say(f"demo-score: checkpoint {k + 1} of {checkpoints}: {len(done)} rollouts, mean return "
                        f"{np.mean([e.episode_return for e in done]):.4g}"
                        + (f", {sum(e.success for e in done)} successes" if reported else ""))

        curriculum = learner_curriculum(policy, list(data.trajectories), batch_size=self.batch_size, variant="Agn",
                                        rng=np.random.default_rng(batch_seed), log=False,
                                        steps_per_epoch=math.ceil(self.steps / checkpoints), callbacks=[_Checkpoint()])
        curriculum.train(checkpoints)
        return found

    def scores(self, data: Any, checkpoints: list[list], seed: int) -> tuple[np.ndarray, Any]:
        """``((N,) values, classifier)`` from the checkpoints' recorded episodes (steps 2 to 4).

        Raises:
            ValueError: the training checkpoints' rollouts all of one outcome (naming the counts).
        """
        from curteach_teaching.datasets.scores.success_classifier import fit_success_classifier

        every = [e for episodes in checkpoints for e in episodes]
        outcome = rollout_outcomes([e.group for e in every], np.array([e.episode_return for e in every]),
                                   np.array([e.success for e in every]), np.array([e.reported for e in every]))
        held = len(every) - len(checkpoints[-1])  # the last checkpoint's rollouts are the last ones
        train, last = every[:held], every[held:]
        wins, held_wins = int(outcome[:held].sum()), int(outcome[held:].sum())
        if wins in (0, held):
            raise ValueError(f"demo-score cannot train its classifier: of the {held} rollouts of its first "
                             f"{len(checkpoints) - 1} checkpoints {wins} succeeded and {held - wins} failed (the "
                             f"held-out checkpoint: {held_wins} of {len(last)}); give more --demo-score-rollouts or "
                             "--demo-score-steps, or rank by a score that needs no rollouts")
        states, lengths = _flat([SimpleNamespace(obs=e.observations, acts=e.actions) for e in train])
        held_states, held_lengths = _flat([SimpleNamespace(obs=e.observations, acts=e.actions) for e in last])
        classifier = fit_success_classifier(
            states, np.repeat(outcome[:held], lengths).astype(np.float64), held_states,
            np.repeat(outcome[held:], held_lengths).astype(np.float64), hidden=self.values["demo_score_hidden"],
            epochs=self.values["demo_score_epochs"],
            seed=int(np.random.SeedSequence([int(seed), DEMO_TAG, 1]).generate_state(1)[0]))
        demo_states, demo_lengths = _flat(list(data.trajectories))
        return 1.0 - per_demonstration_mean(classifier.predict(demo_states), demo_lengths), classifier

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` the Demo-SCORE difficulty of every episode of ``data`` (the module docstring), read from
        ``cache`` where fitted before with these settings, else computed and written there.

        Raises:
            ValueError: data without an environment; rollouts all of one outcome.
        """
        from curteach_teaching.datasets.scores.env_rollouts import has_environment
        from curteach_teaching.digests import trajectories_digest

        if not has_environment(data):
            raise ValueError("demo-score rolls a policy out in the data's environment, and the data has none")
        n = len(data)
        started = time.perf_counter()
        path, found = cached_difficulty(cache, "demo-score", lambda: {
            **self.settings(), "steps": self.steps, "batch_size": self.batch_size, "learning_rate": self.learning_rate,
            "seed": int(seed), "envs": {str(g): str(getattr(spec, "id", spec)) for g, spec in data.env_specs.items()},
            "data": trajectories_digest(list(data.trajectories)), "label": label}, n, say)
        if found is not None:
            return found
        if say is not None:
            v = self.values
            say(f"demo-score: one {getattr(learner, 'policy', 'learner')} policy x {self.steps} steps, "
                f"{v['demo_score_checkpoints']} checkpoints x {v['demo_score_rollouts']} {v['demo_score_actions']} "
                "rollouts per dataset")
        checkpoints = self.rollouts(data, learner, int(seed), say)
        difficulty, classifier = self.scores(data, checkpoints, int(seed))
        if path is not None:
            write_arrays(path, difficulty=difficulty)
        if say is not None:
            say(f"demo-score ready (classifier epoch {classifier.epoch}, held-out BCE "
                f"{classifier.held_out_losses[classifier.epoch - 1]:.3f}; fitted in "
                f"{time.perf_counter() - started:.0f} s)")
        return difficulty
