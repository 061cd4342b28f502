"""Teachers on hand-made cases with known answers, and Cur teaching a learner that is not ours."""

import numpy as np
import pytest

from curteach_envs import CarTeachEnv
from curteach_teaching import names
from curteach_teaching.demonstrations import DemonstrationPool, sample_demonstrations
from curteach_teaching.planning import hard_value_iteration
from curteach_teaching.teaching.teachers import (
    TEACHER_NAMES,
    AgnosticTeacher,
    BlackBoxTeacher,
    CurriculumTeacher,
    LearnerDifficultyTeacher,
    OmniscientTeacher,
    PolicyView,
    ScotTeacher,
    TeacherDifficultyTeacher,
    scot_batch,
)

LOG_HALF = np.log(0.5)


def test_names_are_defined_once():
    assert TEACHER_NAMES is names.TEACHER_NAMES == ("Agn", "Omn", "Scot", "Cur", "Cur-T", "Cur-L", "BBox")
    classes = (AgnosticTeacher, OmniscientTeacher, ScotTeacher, CurriculumTeacher, TeacherDifficultyTeacher,
               LearnerDifficultyTeacher, BlackBoxTeacher)
    assert tuple(cls.name for cls in classes) == names.TEACHER_NAMES  # the order of play
    assert names.BC_TEACHER_NAMES == ("Agn", "Cur", "Cur-T", "Cur-L")
    assert names.CURRICULUM_VARIANTS == ("Cur", "Cur-L", "Cur-T", "Agn")
    assert set(names.BC_TEACHER_NAMES) == set(names.CURRICULUM_VARIANTS) < set(names.TEACHER_NAMES)


def _pool(states, actions, starts):
    states, actions = np.array(states), np.array(actions)
    last = states[..., -1:] + 1
    return DemonstrationPool(
        start_states=np.array(starts),
        observations=np.concatenate([states, last], axis=-1),
        actions=actions,
        terminal=np.ones(states.shape[:2], dtype=bool),
    )


class FixedPolicy:
    """A view with a given log-policy."""

    def __init__(self, log_policy):
        self.log_policy = np.asarray(log_policy, dtype=float)

    def action_log_probabilities(self):
        return self.log_policy


# 4 "start" states 0..3, 2 actions, one demonstration of one step per start: (s, a) = (k, 0)
HAND_POOL = _pool([[[0]], [[1]], [[2]], [[3]]], [[[0]], [[0]], [[0]], [[0]]], [0, 1, 2, 3])


def test_cur_picks_the_largest_ratio_with_ties_to_lowest_index():
    teacher_log = np.log(np.array([[1.0, 0.0], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]) + 1e-300)
    learner = FixedPolicy(np.log([[0.5, 0.5], [0.5, 0.5], [0.25, 0.75], [0.25, 0.75]]))
    cur = CurriculumTeacher(HAND_POOL, teacher_log)
    # ratios pi^E/pi^L: 2, 1, 4, 4 -> states 2 and 3 tie; the lowest index wins
    assert cur.select(learner, 0) == 2
    np.testing.assert_allclose(np.exp(cur.last_scores), [2, 1, 4, 4])
    assert isinstance(learner, PolicyView)


def test_cur_l_and_cur_t():
    learner = FixedPolicy(np.log([[0.5, 0.5], [0.1, 0.9], [0.25, 0.75], [0.1, 0.9]]))
    assert LearnerDifficultyTeacher(HAND_POOL).select(learner, 0) == 1  # -log 0.1 is the largest, first of a tie
    teacher_log = np.log([[0.5, 0.5], [1.0, 1e-300], [1 / 3, 2 / 3], [1.0, 1e-300]])
    cur_t = TeacherDifficultyTeacher(HAND_POOL, teacher_log)
    # easiest for the teacher first (1 and 3 tie at log 1 = 0, lower index first), then 0 (log .5), 2 (log 1/3)
    picks = [cur_t.select(None, t) for t in range(8)]
    assert picks == [1, 3, 0, 2, 1, 3, 0, 2]  # a sweep without repeats, then the same order again


def test_cur_t_on_the_car_is_a_period_40_sweep():
    mdp = CarTeachEnv(layout_seed=2).tabular()
    expert = hard_value_iteration(mdp)
    pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0))
    cur_t = TeacherDifficultyTeacher(pool, expert.log_policy)
    picks = [cur_t.select(None, t) for t in range(80)]
    assert sorted(picks[:40]) == sorted(mdp.start_states.tolist())
    assert picks[40:] == picks[:40]
    order = np.searchsorted(pool.start_states, picks[:40])
    scores = cur_t.fixed_scores[order]
    assert np.all(np.diff(scores) <= 0)  # easiest first
    ties = np.diff(scores) == 0
    assert np.all(np.diff(order)[ties] > 0)  # ties by increasing index
    assert scores[-1] == pytest.approx(-100 * np.log(3))  # fully tied (T0-like) tasks come last


class FakeGradientLearner:
    def __init__(self, parameters, learning_rate, gradients):
        self.parameters = np.asarray(parameters, float)
        self.learning_rate = learning_rate
        self._gradients = np.asarray(gradients, float)

    def gradients_per_start(self, expert_occupancy_per_start):
        assert expert_occupancy_per_start.shape[0] == self._gradients.shape[0]
        return self._gradients


def test_omn_by_hand():
    theta_star = np.array([1.0, 0.0])
    learner = FakeGradientLearner([0.0, 0.0], 0.5, [[0.0, 0.0], [-1.0, 0.0], [-4.0, 0.0], [0.0, 1.0]])
    omn = OmniscientTeacher(np.array([0, 20, 40, 60]), theta_star, np.zeros((4, 5)))
    # ||theta - eta g - theta*||^2 - ||theta - theta*||^2 = 0, -0.75, 0, 0.25 -> start 20
    assert omn.select(learner, 0) == 20
    np.testing.assert_allclose(omn.last_scores, [0.0, -0.75, 0.0, 0.25])
    # when no start moves theta closer, the zero-gradient start (a T0 task) wins: Omn stalls
    stuck = FakeGradientLearner([0.0, 0.0], 0.5, [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert omn.select(stuck, 1) == 0


class FakeOccupancyLearner:
    def __init__(self, occupancy):
        self._occupancy = np.asarray(occupancy, float)

    def occupancy_per_start(self):
        return self._occupancy


def test_bbox_by_hand():
    reward = np.array([1.0, -1.0, 0.0])
    expert = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    learner = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    bbox = BlackBoxTeacher(np.array([0, 1, 2]), reward, expert)
    assert bbox.select(FakeOccupancyLearner(learner), 0) == 2  # |gaps| = 1, 0, 3
    np.testing.assert_allclose(bbox.last_scores, [1.0, 0.0, 3.0])


def test_scot_cover_then_uniform():
    mu = np.array([[0, 0], [1, 0], [0, 0], [1, 0], [2, 2], [0, 0]], dtype=float)
    assert scot_batch(mu) == [0, 1, 4]
    starts = np.arange(6) * 20
    scot = ScotTeacher(starts, mu, np.random.default_rng(0))
    picks = [scot.select(None, t) for t in range(200)]
    assert picks[:3] == [0, 20, 80]
    assert set(picks[3:]) == set(starts.tolist())  # then uniform, with replacement


def test_agn_is_seeded_and_uniform():
    starts = np.arange(40) * 20
    a = AgnosticTeacher(starts, np.random.default_rng(5))
    b = AgnosticTeacher(starts, np.random.default_rng(5))
    picks = [a.select(None, t) for t in range(4000)]
    assert picks[:50] == [b.select(None, t) for t in range(50)]
    counts = np.bincount(np.array(picks) // 20, minlength=40)
    assert counts.min() > 60 and counts.max() < 140


# ---------------------------------------------------------------- a user's own learner, taught by Cur
class CountingLearner:
    """Not ours: a tabular softmax policy whose logits grow by ``step`` for every demonstrated (s, a)."""

    def __init__(self, n_states, n_actions, step=1.0):
        self.logits = np.zeros((n_states, n_actions))
        self.step = step

    def action_log_probabilities(self):
        shifted = self.logits - self.logits.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def learn(self, trajectories):
        for trajectory in trajectories:  # imitation Trajectory objects, obs = state ids
            np.add.at(self.logits, (trajectory.obs[:-1], trajectory.acts), self.step)


def _pool_log_likelihood(learner, pool):
    return learner.action_log_probabilities()[pool.states, pool.actions].sum()


def test_cur_teaches_a_user_learner():
    mdp = CarTeachEnv(layout_seed=4).tabular()
    expert = hard_value_iteration(mdp)
    pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(1))
    results = {}
    for name in ("Cur", "Agn"):
        learner = CountingLearner(mdp.n_states, mdp.n_actions, step=0.5)
        if name == "Cur":
            teacher = CurriculumTeacher(pool, expert.log_policy)
        else:
            teacher = AgnosticTeacher(pool.start_states, np.random.default_rng(0))
        chosen = []
        for t in range(15):
            state = teacher.select(learner, t)
            chosen.append(state)
            learner.learn(pool.trajectories(int(np.searchsorted(pool.start_states, state))))
        results[name] = (_pool_log_likelihood(learner, pool), chosen)
    # Cur never repeats a start it has taught this learner well, and the learner ends up closer to the teacher
    assert results["Cur"][0] > results["Agn"][0]
    assert len(set(results["Cur"][1])) == 15
