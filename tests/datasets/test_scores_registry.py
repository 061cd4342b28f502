"""The task-score registry: built-ins (length, minus the return, the ladder's level, the fitted ensemble), fields from
metadata and infos, a user's function, and their checks: the one place that decides a task difficulty."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from curteach_teaching.datasets import (
    TASK_SCORES,
    EpisodePool,
    TaskScore,
    describe_task_scores,
    is_trained,
    read_pool,
    score_names,
    score_terms,
    task_difficulty,
    write_pool,
)
from curteach_teaching.registry import PluginError


@pytest.fixture
def pool(make_pool):
    write_pool(make_pool("discrete", n_episodes=4), "test/scores-v0", data_format="arrow")
    return read_pool("test/scores-v0")


def _regrouped(pool, groups):
    return EpisodePool(trajectories=pool.trajectories, episode_ids=pool.episode_ids, seeds=pool.seeds,
                       groups=tuple(groups), metadata=pool.metadata, infos=pool.infos,
                       observation_space=pool.observation_space, action_space=pool.action_space)


def test_the_built_ins_by_hand(pool):
    assert TASK_SCORES.names()[:4] == ("length", "return", "level", "ensemble")
    assert task_difficulty(pool, "length").tolist() == [len(t.acts) for t in pool.trajectories]
    assert task_difficulty(pool, "length").dtype == np.float64
    # minus the return: the better demonstration is the easier one
    np.testing.assert_allclose(task_difficulty(pool, "return"), [-float(np.sum(t.rews)) for t in pool.trajectories])
    # level: the rank of each episode's dataset in the order the datasets come, 1-based
    ladder = _regrouped(pool, ["easy", "hard", "easy", "middle"])
    assert task_difficulty(ladder, "level").tolist() == [1.0, 2.0, 1.0, 3.0]
    with pytest.raises(ValueError, match="^task score 'level' ranks the datasets of a ladder: give at least two$"):
        task_difficulty(pool, "level")


def test_the_ensemble_is_trained_elsewhere_and_its_values_are_checked(pool):
    assert is_trained("ensemble") and not is_trained("length") and not is_trained("difficulty")
    with pytest.raises(ValueError, match="^task score 'ensemble' is trained: its values come from the prepare "
                                         "step's fit"):
        task_difficulty(pool, "ensemble")
    values = np.array([0.5, -2.0, 3.0, 1e6])  # any finite value: a log-density may be positive
    np.testing.assert_array_equal(task_difficulty(pool, "ensemble", trained={"ensemble": values}), values)
    with pytest.raises(ValueError, match=r"'ensemble' is nan for episode 1 .*scores must be finite"):
        task_difficulty(pool, "ensemble", trained={"ensemble": [0.0, np.nan, 1.0, 2.0]})


def test_fields_from_metadata_and_infos(pool):
    assert task_difficulty(pool, "difficulty").tolist() == [m["difficulty"] for m in pool.metadata]
    assert task_difficulty(pool, "success").tolist() == [1.0] * 4  # the info's value after the last step
    # a built-in shadows a field of the same name: the pool's metadata field 'level' is not the ladder's
    assert [m["level"] for m in pool.metadata] == [0, 1, 2, 3]
    assert score_names(pool) == ("length", "return", "level", "ensemble", "deminf", "policy-loss", "action-likelihood",
                                 "action-variance", "demo-score", "cupid", "difficulty", "total_steps", "success")


def test_an_unknown_name_lists_the_available_ones(pool):
    with pytest.raises(ValueError, match=r"^no task score 'hardness'; available: length, return, level, ensemble, "
                                         r"deminf, policy-loss, action-likelihood, action-variance, "
                                         r"demo-score, cupid, difficulty, total_steps, success "
                                         r"\(or not:FIELD, a weighted sum such as "
                                         r"length\+2\*return, or module:attr for your own function\)$"):
        task_difficulty(pool, "hardness")
    with pytest.raises(ValueError, match="'name' is missing or not a number in the metadata of episode 0"):
        task_difficulty(pool, "name")


def _with_difficulty(pool, values):
    metadata = [{**m, "difficulty": v} for m, v in zip(pool.metadata, values)]
    return EpisodePool(trajectories=pool.trajectories, episode_ids=pool.episode_ids, seeds=pool.seeds,
                       groups=pool.groups, metadata=metadata, infos=pool.infos,
                       observation_space=pool.observation_space, action_space=pool.action_space)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scores_name_the_episode(pool, bad):
    broken = _with_difficulty(pool, [0.5, 0.1, bad, bad])
    with pytest.raises(ValueError, match=rf"^task score 'difficulty' is {bad} for episode 2 of 'test/scores-v0' "
                                         r"\(position 2\); scores must be finite \(2 episodes in all\)$"):
        task_difficulty(broken, "difficulty")


def test_a_users_function_by_name_or_object(pool, monkeypatch):
    module = types.ModuleType("my_scores")
    module.by_seed = lambda p: np.array([-1.0 if s is None else s for s in p.seeds])
    module.wrong_shape = lambda p: np.zeros(len(p) + 1)
    module.not_callable = 3
    module.raises = lambda p: 1 / 0
    module.named = TaskScore("named", "a plug-in with a summary", lambda p: np.arange(len(p)))
    monkeypatch.setitem(sys.modules, "my_scores", module)
    assert task_difficulty(pool, "my_scores:by_seed").tolist() == [100.0, -1.0, 102.0, 103.0]
    assert task_difficulty(pool, module.by_seed).tolist() == [100.0, -1.0, 102.0, 103.0]
    assert task_difficulty(pool, "my_scores:named").tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"must give one number per episode, shape \(4,\); got \(5,\)"):
        task_difficulty(pool, "my_scores:wrong_shape")
    with pytest.raises(ValueError, match="is not callable"):
        task_difficulty(pool, "my_scores:not_callable")
    with pytest.raises(ValueError, match="^task score 'no_such_module:f': cannot import 'no_such_module'"):
        task_difficulty(pool, "no_such_module:f")
    # a user's function that raises: one line naming it (the traceback kept for the log), not a crash
    with pytest.raises(PluginError, match=r"^task score factory 'raises' raised ZeroDivisionError: division by zero$"):
        task_difficulty(pool, "my_scores:raises")


def test_return_needs_rewards(make_pool):
    from imitation.data.types import Trajectory

    source = make_pool("box")
    plain = [Trajectory(obs=t.obs, acts=t.acts, infos=None, terminal=t.terminal) for t in source.trajectories]
    pool = EpisodePool.from_trajectories(plain, source.observation_space, source.action_space)
    with pytest.raises(ValueError, match="needs rewards"):
        task_difficulty(pool, "return")


def test_the_help_lists_the_registry():
    text = describe_task_scores()
    assert text.startswith("length (actions per episode), return (minus the episode's return")
    assert "ensemble (fitted: " in text


def _with_fields(pool, **fields):
    metadata = [{**m, **{k: v[i] for k, v in fields.items()}} for i, m in enumerate(pool.metadata)]
    return EpisodePool(trajectories=pool.trajectories, episode_ids=pool.episode_ids, seeds=pool.seeds,
                       groups=pool.groups, metadata=metadata, infos=pool.infos,
                       observation_space=pool.observation_space, action_space=pool.action_space)


def test_not_a_field_is_one_where_it_is_false(pool):
    flagged = _with_fields(pool, good=[True, False, True, np.bool_(True)], grade=[0.0, 1.0, 0.5, 1.0])
    assert task_difficulty(flagged, "not:good").tolist() == [0.0, 1.0, 0.0, 0.0]
    assert task_difficulty(flagged, "not:success").tolist() == [0.0] * 4  # an info field: every episode succeeded
    assert not is_trained("not:good")
    with pytest.raises(ValueError, match=r"^task score 'not:grade' needs a 0/1 \(True/False\) field; 'grade' is 0.5 "
                                         r"for episode 2 of 'test/scores-v0'$"):
        task_difficulty(flagged, "not:grade")
    with pytest.raises(ValueError, match=r"^task score 'not:' names no field after 'not:' \(e.g. not:success\)$"):
        task_difficulty(flagged, "not:")
    with pytest.raises(ValueError, match=r"^task score 'not:shiny': no episode has a field 'shiny'; fields: "):
        task_difficulty(flagged, "not:shiny")


def test_a_weighted_sum_by_hand(pool):
    # difficulty 2, 1, 3, 4: mean 2.5, population std sqrt(1.25); not:good flags one episode of four, p = 1/4:
    # the flagged one is (1 - p) / sqrt(p (1 - p)) = sqrt(3) standard deviations up, the others -1 / sqrt(3)
    flagged = _with_fields(pool, difficulty=[2.0, 1.0, 3.0, 4.0], good=[True, False, True, True],
                           same=[7.0] * 4)
    z_difficulty = (np.array([2.0, 1.0, 3.0, 4.0]) - 2.5) / np.sqrt(1.25)
    z_failed = np.array([-1, 3, -1, -1]) / np.sqrt(3.0)
    np.testing.assert_allclose(task_difficulty(flagged, "difficulty+100*not:good"), z_difficulty + 100 * z_failed,
                               rtol=1e-12)
    # the easiest by difficulty is the flagged one; with the flag's weight it is the hardest
    assert int(np.argmax(task_difficulty(flagged, "difficulty+100*not:good"))) == 1
    np.testing.assert_allclose(task_difficulty(flagged, "2*difficulty"), 2 * z_difficulty, rtol=1e-12)
    np.testing.assert_allclose(task_difficulty(flagged, " difficulty + -0.5 * not:good "),
                               z_difficulty - 0.5 * z_failed, rtol=1e-12)
    # a score equal for every episode adds nothing
    np.testing.assert_allclose(task_difficulty(flagged, "difficulty+3*same"), z_difficulty, rtol=1e-12)


def test_a_sum_with_the_trained_ensemble(pool):
    flagged = _with_fields(pool, good=[True, False, True, True])
    assert is_trained("length+ensemble") and not is_trained("length+2*not:good")
    assert score_terms("ensemble+100*not:good") == ("ensemble", "not:good") and score_terms("length") == ("length",)
    with pytest.raises(ValueError, match="^task score 'ensemble' is trained"):
        task_difficulty(flagged, "ensemble+100*not:good")
    ensemble = np.array([0.0, -3.0, 1.0, 2.0])  # mean 0, population std sqrt(3.5)
    np.testing.assert_allclose(task_difficulty(flagged, "ensemble+100*not:good", trained={"ensemble": ensemble}),
                               ensemble / np.sqrt(3.5) + 100 * np.array([-1, 3, -1, -1]) / np.sqrt(3.0), rtol=1e-12)


@pytest.mark.parametrize("spec, message", [
    ("length+", r"each term of a sum is NAME or W\*NAME .*; got ''"),
    ("0*length", "a weight must be a finite non-zero number; got 0.0"),
    ("length+2*length", "names length twice; give each score once, weighted"),
    ("2**length", r"each term of a sum is NAME or W\*NAME .*; got '2\*\*length'"),
    ("x*length", r"each term of a sum is NAME or W\*NAME .*; got 'x\*length'"),
    ("length+hardness", "^no task score 'hardness'; available: "),
])
def test_a_sum_that_does_not_parse_is_one_line(pool, spec, message):
    with pytest.raises(ValueError, match=message):
        task_difficulty(pool, spec)


def test_an_option_at_its_unkeyed_value_is_left_out_of_the_settings():
    from curteach_teaching.datasets.scores.cupid import CupidScore
    from curteach_teaching.datasets.scores.ensemble import EnsembleScore
    from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore

    class Scored(TrainedScore):
        options = (ScoreOption("a", int, 1, "always keyed"), ScoreOption("b", str, "new", "", unkeyed="old"),
                   ScoreOption("c", int, 3, ""))

    assert Scored().settings() == {"a": 1, "b": "new", "c": 3}  # the default keys where it is not the unkeyed value
    assert Scored(b="old").settings() == {"a": 1, "c": 3}
    assert list(Scored(c=4).settings()) == ["a", "b", "c"]  # in the options' order
    # the built-ins' later options: at the values from before them, absent
    assert "ensemble_fit" not in EnsembleScore(ensemble_fit="sequential").settings()
    assert EnsembleScore(ensemble_fit="batched").settings()["ensemble_fit"] == "batched"
    assert "cupid_weights" not in CupidScore().settings()
