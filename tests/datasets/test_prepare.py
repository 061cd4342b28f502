"""The one prepare step of rank and dataset-bc: plain scores checked and computed on the pool, trained ones fitted once
(with their settings and the caller's cache key), weighted sums combined after, nothing encoded where nothing
trains."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("imitation")

from curteach_teaching.datasets.prepare import fit_scores, learner_factory, prepare  # noqa: E402
from curteach_teaching.datasets.scores.registry import is_trained, trained_score, trained_terms  # noqa: E402
from curteach_teaching.datasets.scores.sums import combine, parse_sum  # noqa: E402
from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore  # noqa: E402


class FirstAction(TrainedScore):
    """A trained score for the tests: each episode's first action times ``scale``, counting its fits."""

    options = (ScoreOption("scale", float, 1.0, "a factor"),)
    fits: list = []

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` the first action of each episode, scaled (checks the learner builds a policy for the data)."""
        type(self).fits.append((seed, label, len(data)))
        assert learner(3) is not None and data.codec is not None
        return self.values["scale"] * np.array([float(t.acts[0]) for t in data.trajectories])


@pytest.fixture
def pool():
    import gymnasium as gym
    from imitation.data.types import TrajectoryWithRew

    from curteach_teaching.datasets.pool import EpisodePool

    rng = np.random.default_rng(0)
    env = gym.make("CartPole-v1")
    episodes = [TrajectoryWithRew(obs=rng.normal(size=(n + 1, 4)).astype(np.float32), acts=np.array([i % 2] * n),
                                  infos=None, terminal=True, rews=np.ones(n)) for i, n in enumerate((3, 5, 4, 6))]
    return EpisodePool.from_trajectories(episodes, env.observation_space, env.action_space, group="g",
                                         env_spec=env.spec)


def test_plain_scores_need_no_learner_and_nothing_is_encoded(pool):
    data = prepare(pool, ["length", "length+2*return"], policy=None)
    assert data.codec is None and data.digest == "" and data.trajectories == tuple(pool.trajectories)
    np.testing.assert_array_equal(data.task_scores["length"], [3, 5, 4, 6])
    assert set(data.task_scores) == {"length", "length+2*return"}
    with pytest.raises(ValueError, match="no task score 'lenght'"):
        prepare(pool, ["length"], checked=["lenght"], policy=None)  # a flag is checked even when not read


def test_a_trained_score_is_fitted_once_with_its_settings_and_the_sums_after(pool, monkeypatch):
    import sys

    module = type(sys)("first_action_module")
    module.FirstAction = FirstAction
    monkeypatch.setitem(sys.modules, "first_action_module", module)
    name = "first_action_module:FirstAction"
    assert is_trained(name) and is_trained(f"{name}+length") and not is_trained("length")
    assert trained_terms([f"{name}+length", name, "length"]) == (name,)
    score = trained_score(name, {"scale": 2.0, "other": 1})
    assert score.settings() == {"scale": 2.0}
    with pytest.raises(ValueError, match="is not a trained score"):
        trained_score("length", {})
    tasks = [name, f"{name}+3*length"]
    data = prepare(pool, tasks, policy="auto")
    assert name not in data.task_scores and "length" in data.task_scores and data.digest
    with pytest.raises(ValueError, match="trained: prepare the data with a policy"):
        prepare(pool, tasks, policy=None)
    FirstAction.fits.clear()
    learner = learner_factory("auto", data)
    fitted = fit_scores(data, tasks, {name: score}, learner=learner, seed=7, label="L")
    assert FirstAction.fits == [(7, "L", 4)]  # once, for the score alone and the sum
    np.testing.assert_array_equal(fitted.task_scores[name], [0.0, 2.0, 0.0, 2.0])
    expected = combine(parse_sum(f"{name}+3*length"), fitted.task_scores)
    np.testing.assert_array_equal(fitted.task_scores[f"{name}+3*length"], expected)
    assert fit_scores(fitted, tasks, {}, learner=learner).task_scores.keys() == fitted.task_scores.keys()


def test_a_trained_score_on_one_episode_and_bad_values_are_one_line(pool):
    import sys

    sys.modules["first_action_module2"] = type(sys)("first_action_module2")
    sys.modules["first_action_module2"].FirstAction = FirstAction
    try:
        with pytest.raises(ValueError, match="needs at least 2 episodes"):
            prepare(pool.select([0]), ["first_action_module2:FirstAction"], policy="auto")
        data = prepare(pool, ["first_action_module2:FirstAction"], policy="auto")
        bad = FirstAction(scale=float("nan"))
        with pytest.raises(ValueError, match="one finite number per episode"):
            fit_scores(data, ["first_action_module2:FirstAction"], {"first_action_module2:FirstAction": bad},
                       learner=lambda seed: object())
    finally:
        del sys.modules["first_action_module2"]
