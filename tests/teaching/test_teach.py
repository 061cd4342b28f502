"""The public teaching loop: lanes, lessons, views, divergence, and a learner written outside the library."""

import numpy as np
import pytest

from curteach_teaching.learners import MaxEntIRLLearner
from curteach_teaching.learners.divergence import LearnerDiverged
from curteach_teaching.planning import expected_return
from curteach_teaching.teaching.loop import Learner, LessonBook, teach
from curteach_teaching.teaching.observability import ProbedPolicyView
from curteach_teaching.teaching.teachers import AgnosticTeacher, CurriculumTeacher

LAYOUT_SEED = 2  # the road these tests teach on: car_road(LAYOUT_SEED)


class TabularSoftmax:
    """A learner a user might write: a free (S, A) logit table, one gradient step of the demonstrations'
    log-likelihood per lesson."""

    def __init__(self, n_states, n_actions, rate=0.5):
        self.logits = np.zeros((n_states, n_actions))
        self.rate = rate
        self.lessons = []

    def action_log_probabilities(self):
        shifted = self.logits - self.logits.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def learn(self, lesson):
        self.lessons.append(lesson.start_state)
        states, actions = lesson.states.ravel(), lesson.actions.ravel()
        gradient = np.zeros_like(self.logits)
        np.add.at(gradient, (states, actions), 1.0)
        np.add.at(gradient, states, -np.exp(self.action_log_probabilities()[states]))
        self.logits += self.rate * gradient / states.size


def test_lesson_book(car_road):
    road = car_road(LAYOUT_SEED)
    pool, rho = road.pool, road.expert_rho
    book = LessonBook(pool, rho)
    k = 7
    lesson = book(int(pool.start_states[k]))
    assert lesson.start_index == k and lesson.start_state == pool.start_states[k]
    np.testing.assert_array_equal(lesson.states, pool.states[k])
    np.testing.assert_array_equal(lesson.actions, pool.actions[k])
    np.testing.assert_array_equal(lesson.occupancy, rho[k])
    assert LessonBook(pool)(int(pool.start_states[0])).occupancy is None
    with pytest.raises(ValueError, match="not a start state"):
        book(1)  # state 1 is inside a road, not a start
    with pytest.raises(ValueError, match="occupancy_per_start must have shape"):
        LessonBook(pool, rho[:3])


def test_teach_equals_the_hand_written_loop(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool, rho = road.mdp, road.expert, road.pool, road.expert_rho
    base = MaxEntIRLLearner(mdp, learning_rate=0.1)
    teachers = {"Cur": CurriculumTeacher(pool, expert.log_policy),
                "Agn": AgnosticTeacher(pool.start_states, np.random.default_rng(3))}
    learners = {name: base.copy() for name in teachers}
    lanes = teach(teachers, learners, 6, lessons=LessonBook(pool, rho), evaluate=lambda lr: lr.expected_reward)
    # the same by hand, one lane after the other (lanes are independent)
    for name, teacher in [("Cur", CurriculumTeacher(pool, expert.log_policy)),
                          ("Agn", AgnosticTeacher(pool.start_states, np.random.default_rng(3)))]:
        learner = base.copy()
        curve, picks = [learner.expected_reward], []
        for t in range(6):
            state = teacher.select(learner, t)
            learner.update(rho[list(pool.start_states).index(state)], state)
            curve.append(learner.expected_reward)
            picks.append(state)
        np.testing.assert_array_equal(lanes[name].curve, curve)
        np.testing.assert_array_equal(lanes[name].picks, picks)
        assert lanes[name].diverged_at is None
    assert list(lanes) == ["Cur", "Agn"]


def test_a_learner_from_outside_taught_by_cur(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool = road.mdp, road.expert, road.pool
    learner = TabularSoftmax(mdp.n_states, mdp.n_actions)
    assert isinstance(learner, Learner)
    evaluate = lambda lr: expected_return(mdp, np.exp(lr.action_log_probabilities()))  # noqa: E731
    before = evaluate(learner)
    lanes = teach({"Cur": CurriculumTeacher(pool, expert.log_policy)}, {"Cur": learner}, 20, lessons=LessonBook(pool),
                  evaluate=evaluate)
    assert lanes["Cur"].curve[0] == before and learner.lessons == list(lanes["Cur"].picks)
    assert lanes["Cur"].curve[-1] > before  # imitating the expert raises the true reward
    # Cur picks the start the learner finds hardest relative to the teacher: never one just learnt twice in a row
    assert len(set(learner.lessons)) > 5


def test_views_are_told_the_step(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool, rho = road.mdp, road.expert, road.pool, road.expert_rho
    learner = MaxEntIRLLearner(mdp, learning_rate=0.1)
    view = ProbedPolicyView(learner, 3, None)
    teach({"Cur": CurriculumTeacher(pool, expert.log_policy)}, {"Cur": learner}, 7, views={"Cur": view},
          lessons=LessonBook(pool, rho), evaluate=lambda lr: lr.expected_reward)
    assert view.n_refreshes == 3  # steps 0, 3, 6


class Exploding(TabularSoftmax):
    def learn(self, lesson):
        if len(self.lessons) == 2:
            raise LearnerDiverged("boom")
        super().learn(lesson)


def test_a_diverging_lane_stops_learning_and_goes_on_being_evaluated(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool = road.mdp, road.expert, road.pool
    learner = Exploding(mdp.n_states, mdp.n_actions)
    calls = []
    lanes = teach({"Cur": CurriculumTeacher(pool, expert.log_policy)}, {"Cur": learner}, 5, lessons=LessonBook(pool),
                  evaluate=lambda lr: calls.append(1) or float(lr.logits.sum()),
                  before_select=lambda name, t, lr: calls.append((name, t)))
    assert lanes["Cur"].diverged_at == 2 and len(learner.lessons) == 2
    assert len(lanes["Cur"].curve) == 6 and len(lanes["Cur"].picks) == 5
    assert [c for c in calls if c != 1] == [("Cur", t) for t in range(5)]
    # lanes that diverged before teaching are never taught
    fresh = TabularSoftmax(mdp.n_states, mdp.n_actions)
    lanes = teach({"Cur": CurriculumTeacher(pool, expert.log_policy)}, {"Cur": fresh}, 3, lessons=LessonBook(pool),
                  evaluate=lambda lr: 0.0, diverged={"Cur": 0})
    assert fresh.lessons == [] and lanes["Cur"].diverged_at == 0


def test_learn_many_replaces_the_per_lane_updates(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool = road.mdp, road.expert, road.pool
    seen = []

    def learn_many(learners, lessons):
        seen.append([lesson.start_index for lesson in lessons])
        return [1] if len(seen) == 2 else []

    teachers = {"A": CurriculumTeacher(pool, expert.log_policy), "B": CurriculumTeacher(pool, expert.log_policy)}
    learners = {name: TabularSoftmax(mdp.n_states, mdp.n_actions) for name in teachers}
    lanes = teach(teachers, learners, 4, lessons=LessonBook(pool), evaluate=lambda lr: 0.0, learn_many=learn_many)
    assert [len(batch) for batch in seen] == [2, 2, 1, 1]  # B diverged at step 1
    assert lanes["B"].diverged_at == 1 and lanes["A"].diverged_at is None


def test_bad_arguments(car_road):
    road = car_road(LAYOUT_SEED)
    expert, pool = road.expert, road.pool
    teachers = {"Cur": CurriculumTeacher(pool, expert.log_policy)}
    with pytest.raises(ValueError, match="learners must have the teachers' names"):
        teach(teachers, {"X": None}, 1, lessons=LessonBook(pool), evaluate=float)
    with pytest.raises(ValueError, match="views must have"):
        teach(teachers, {"Cur": None}, 1, views={}, lessons=LessonBook(pool), evaluate=float)
    with pytest.raises(ValueError, match="steps"):
        teach(teachers, {"Cur": None}, -1, lessons=LessonBook(pool), evaluate=float)


def test_maxent_irl_needs_the_occupancy(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, pool = road.mdp, road.pool
    with pytest.raises(ValueError, match="occupancy measure"):
        MaxEntIRLLearner(mdp).learn(LessonBook(pool)(int(pool.start_states[0])))
