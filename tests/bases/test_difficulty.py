"""Difficulty scores: closed forms on the car, log-space safety, Lemma 1 and Theorem 1 of the paper."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from curteach_envs.navigation.generate import generate_dataset
from curteach_envs.tabular import TabularMDP
from curteach_teaching.difficulty import (
    MIN_LOG_PROB,
    aggregate,
    check_aggregation,
    curriculum_scores,
    index_observations,
    learner_difficulty_scores,
    log_difficulty,
    log_likelihood,
    minmax_log,
    shortest_path_teacher_difficulty,
    sum_per_demonstration,
    teacher_difficulty_scores,
    teacher_log_difficulty,
    tsp_teacher_difficulty,
)
from curteach_teaching.learners import MaxEntIRLLearner

LAYOUT_SEED = 5  # the road of the closed forms: car_road(LAYOUT_SEED)


def test_t0_closed_forms(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool = road.mdp, road.expert, road.pool
    learner = MaxEntIRLLearner(mdp)  # theta = 1: R = 0 on every T0 cell, so pi^L is exactly uniform there
    t0 = mdp.task_of_state[pool.start_states] == 0
    log_e = expert.log_policy
    cur = curriculum_scores(log_e, learner.log_policy, pool.states, pool.actions, "mean")
    # the original's sum of 10 ratios prod pi^E/pi^L is exactly 10 on T0, i.e. a log-mean of exactly 0
    assert np.all(cur[t0] == 0.0)
    assert np.all(10 * np.exp(cur[t0]) == 10.0)
    cur_l = learner_difficulty_scores(learner.log_policy, pool.states, pool.actions)
    np.testing.assert_allclose(cur_l[t0], 100 * np.log(3), rtol=1e-14)
    cur_t = teacher_difficulty_scores(log_e, pool.states, pool.actions)
    np.testing.assert_allclose(cur_t[t0], -100 * np.log(3), rtol=1e-14)
    # Cur-T scores are -(number of tied steps) ln 3, and equal counts give bit-identical scores (exact ties)
    counts = np.rint(-cur_t / np.log(3)).astype(int)
    np.testing.assert_allclose(cur_t, -counts * np.log(3), rtol=1e-13)
    for c in np.unique(counts):
        assert np.unique(cur_t[counts == c]).size == 1


def test_mean_aggregation_matches_sum_of_ratios(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert, pool = road.mdp, road.expert, road.pool
    learner = MaxEntIRLLearner(mdp)  # theta = 1: R = 0 on every T0 cell, so pi^L is exactly uniform there
    rng = np.random.default_rng(1)
    log_l = learner.log_policy + 0.0
    # a learner that is somewhat worse than uniform, so the ratios are moderate and the direct form is exact
    log_l = np.log(np.exp(log_l) * rng.uniform(0.5, 1.5, log_l.shape))
    log_e = expert.log_policy
    log_l -= np.log(np.exp(log_l).sum(axis=1, keepdims=True))
    ratios = np.prod(expert.policy[pool.states, pool.actions] / np.exp(log_l[pool.states, pool.actions]), axis=2)
    scores = curriculum_scores(log_e, log_l, pool.states, pool.actions, "mean")
    np.testing.assert_allclose(np.exp(scores) * 10, ratios.sum(axis=1), rtol=1e-10)
    geometric = curriculum_scores(log_e, log_l, pool.states, pool.actions, "geometric")
    np.testing.assert_allclose(geometric, np.log(ratios).sum(axis=1), rtol=1e-10, atol=1e-10)


def test_aggregate_by_hand():
    values = np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]])
    np.testing.assert_allclose(aggregate(values, "mean"), [np.log(2.0), 1000.0])
    np.testing.assert_allclose(aggregate(values, "geometric"), [np.log(3.0), 2000.0])
    assert np.isfinite(aggregate(np.array([1e5, -1e5]), "mean"))  # exp would overflow; logsumexp does not
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(values, "median")
    with pytest.raises(ValueError, match="empty"):
        aggregate(np.zeros((2, 0)))


def test_zero_probability_is_safe():
    # 3 states, 2 actions; the learner gives action 1 in state 2 probability exactly 0
    log_l = np.array([[np.log(0.5)] * 2, [np.log(0.5)] * 2, [0.0, -np.inf]])
    log_e = np.log(np.full((3, 2), 0.5))
    states = np.array([[[0, 1]], [[2, 2]], [[1, 0]]])
    actions = np.array([[[0, 1]], [[0, 1]], [[1, 1]]])
    for aggregation in ("mean", "geometric"):
        scores = curriculum_scores(log_e, log_l, states, actions, aggregation)
        assert np.all(np.isfinite(scores))
        assert np.argmax(scores) == 1  # the demonstration the learner cannot reproduce is the hardest
    assert log_likelihood(log_l, states, actions)[1, 0] == pytest.approx(MIN_LOG_PROB)
    assert np.isfinite(learner_difficulty_scores(log_l, states, actions)).all()
    with pytest.raises(ValueError, match="NaN"):
        log_difficulty(np.full((3, 2), np.nan), states, actions)
    with pytest.raises(ValueError, match="same shape"):
        log_difficulty(log_l, states, actions[..., :1])


# ------------------------------------------------- theory checks (the paper's Lemma 1 and Theorem 1)
def _binary_tree_mdp(depth=3, n_features=3, seed=0):
    """A deterministic binary tree (2 actions) of ``depth`` decisions, leaves -> an absorbing sink; gamma = 1."""
    rng = np.random.default_rng(seed)
    n_internal = 2**depth - 1
    n_leaves = 2**depth
    S = n_internal + n_leaves + 1
    sink = S - 1
    rows, cols = [], []
    for s in range(S):
        for a in range(2):
            target = 2 * s + 1 + a if s < n_internal + n_leaves and 2 * s + 1 + a < n_internal + n_leaves else sink
            rows.append(2 * s + a)
            cols.append(target)
    transitions = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(2 * S, S))
    features = rng.normal(size=(S, n_features))
    features[sink] = 0.0
    init = np.zeros(S)
    init[0] = 1.0
    mdp = TabularMDP(transitions, np.zeros(S), features, init, gamma=1.0, horizon=depth + 1)
    return mdp, depth + 1


def _all_demonstrations(mdp, length):
    """Every action sequence from the root: ``(N, length)`` states, actions and feature counts."""
    T = mdp.transitions.toarray().argmax(axis=1)
    states, actions = [], []
    for seq in itertools.product(range(2), repeat=length):
        s, visited = 0, []
        for a in seq:
            visited.append(s)
            s = T[2 * s + a]
        states.append(visited)
        actions.append(seq)
    states, actions = np.array(states), np.array(actions)
    counts = mdp.features[states].sum(axis=1)
    return states, actions, counts


def test_sb3_log_likelihood_matches_the_tabular_one(car_road):
    """The two forms of the one log-likelihood agree; chunking changes nothing; the training mode is restored."""
    from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy

    road = car_road(LAYOUT_SEED)
    mdp, pool = road.mdp, road.pool
    policy = QuadraticSoftmaxPolicy.from_mdp(mdp)
    policy.set_theta(np.linspace(-1.0, 1.0, 16))
    states = pool.states.reshape(-1, pool.states.shape[-1])  # (N, L)
    actions = pool.actions.reshape(states.shape)
    N, L = states.shape
    demo_of_transition = np.repeat(np.arange(N), L)
    tabular = log_likelihood(policy.log_policy_table(), states, actions)
    policy.set_training_mode(True)
    sb3 = demonstration_log_likelihoods(policy, states.reshape(-1), actions.reshape(-1), demo_of_transition, N)
    assert policy.training
    assert sb3.shape == (N,) and sb3.dtype == np.float64
    np.testing.assert_allclose(sb3, tabular, rtol=1e-12)
    for chunk_size in (1, 7, N * L + 1):
        again = demonstration_log_likelihoods(
            policy, states.reshape(-1), actions.reshape(-1), demo_of_transition, N, chunk_size=chunk_size
        )
        assert np.array_equal(again, sb3)


def demonstration_log_likelihoods(policy, obs, acts, demo_of_transition, n, chunk_size=8192):
    """The per-demonstration sums of the action seam's per-step log-probabilities (what the curriculum scores)."""
    from curteach_teaching.learners.actions import step_log_probs

    return sum_per_demonstration(step_log_probs(policy, obs, acts, chunk_size=chunk_size), demo_of_transition, n)


def test_cpu_pieces_cover_each_chunk_and_leave_the_scores_unchanged(monkeypatch):
    """A chunk is forwarded in pieces of rows..2*rows-1 rows (one piece if shorter); the scores do not change."""
    from curteach_envs._util import row_pieces
    from curteach_teaching.learners import actions
    from curteach_teaching.learners.networks import NavigationCNNPolicy

    for begin, end, rows in ((0, 8192, 1024), (8192, 11715, 1024), (5, 1030, 1024), (0, 3, 1024), (0, 50, 7),
                             (0, 9, None)):
        pieces = row_pieces(begin, end, rows)
        assert pieces[0][0] == begin and pieces[-1][1] == end
        assert all(a[1] == b[0] for a, b in zip(pieces[:-1], pieces[1:]))
        if rows is None or end - begin < 2 * rows:
            assert len(pieces) == 1
        else:
            assert all(rows <= stop - start < 2 * rows for start, stop in pieces)
    policy = NavigationCNNPolicy.for_navigation(seed=0)
    rng = np.random.default_rng(0)
    obs = (rng.random((100, 7, 6, 6)) < 0.2).astype(np.float32)
    acts = rng.integers(0, 3, 100)
    demo_of_transition = np.repeat(np.arange(20), 5)
    monkeypatch.setattr(actions, "CPU_PIECE_ROWS", 8)  # chunks of 64 and 36 rows -> pieces of 8 and 9 rows
    pieced = demonstration_log_likelihoods(policy, obs, acts, demo_of_transition, 20, chunk_size=64)
    monkeypatch.setattr(actions, "CPU_PIECE_ROWS", 10**9)
    whole = demonstration_log_likelihoods(policy, obs, acts, demo_of_transition, 20, chunk_size=64)
    # bit-identical with torch 2.13 on x86-64 AVX2; other kernels may differ in the last bits
    np.testing.assert_allclose(pieced, whole, rtol=1e-6)


def test_sum_per_demonstration_floors_every_step_and_nan():
    steps = np.array([-1.0, -np.inf, np.nan, -2.0, 0.5])
    demo_of_transition = np.array([0, 0, 1, 1, 3])
    sums = sum_per_demonstration(steps, demo_of_transition, 4, min_log_prob=-10.0)
    assert sums.tolist() == [-11.0, -12.0, 0.0, 0.5]  # demonstration 2 has no transitions
    assert sum_per_demonstration(np.array([-np.inf]), np.array([0]), 1).tolist() == [MIN_LOG_PROB]


def test_index_observations_of_arrays_and_dict_observations():
    from imitation.data.types import DictObs

    index = np.array([2, 0])
    assert index_observations(np.arange(10).reshape(5, 2), index).tolist() == [[4, 5], [0, 1]]
    obs = DictObs({"a": np.arange(5), "b": np.arange(10).reshape(5, 2)})
    picked = index_observations(obs, index)
    assert isinstance(picked, DictObs)
    assert picked.get("a").tolist() == [2, 0] and picked.get("b").tolist() == [[4, 5], [0, 1]]


def test_check_aggregation_is_public():
    assert check_aggregation("mean") == "mean" and check_aggregation("geometric") == "geometric"
    with pytest.raises(ValueError, match="aggregation must be one of"):
        check_aggregation("median")


def test_lemma1_identity():
    mdp, length = _binary_tree_mdp()
    states, actions, mu = _all_demonstrations(mdp, length)
    rng = np.random.default_rng(3)
    theta_star = rng.normal(size=mdp.n_features)
    teacher = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=theta_star)
    for _ in range(3):
        theta_t = rng.normal(size=mdp.n_features)
        learner = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=theta_t)
        residual = (
            log_difficulty(learner.log_policy, states, actions)
            - log_difficulty(teacher.log_policy, states, actions)
            - mu @ (theta_star - theta_t)
        )
        log_z_t, log_z_star = learner.values[0], teacher.values[0]  # soft values of the root (sink cancels)
        np.testing.assert_allclose(residual, log_z_t - log_z_star, atol=1e-10)


def test_theorem1_monotonicity():
    mdp, length = _binary_tree_mdp(seed=1)
    states, actions, mu = _all_demonstrations(mdp, length)
    rng = np.random.default_rng(4)
    theta_star = rng.normal(size=mdp.n_features)
    theta_t = rng.normal(size=mdp.n_features)
    teacher = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=theta_star)
    learner = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=theta_t)
    objective = log_difficulty(learner.log_policy, states, actions)
    objective = objective - log_difficulty(teacher.log_policy, states, actions)
    eta = 1e-5
    decrease = []
    for visited in states:
        demo_occupancy = np.bincount(visited, minlength=mdp.n_states).astype(float)
        g = learner.gradient(demo_occupancy, 0)  # gradient of -log P(xi | theta)
        step = theta_t - eta * g
        decrease.append(np.sum((theta_star - theta_t) ** 2) - np.sum((theta_star - step) ** 2))
    decrease = np.array(decrease)
    # the decrease grows with the curriculum objective: same ordering, and an affine relation to first order
    # (the last action, at a leaf, does not change the states visited: pairs of demonstrations tie exactly)
    order = np.argsort(objective, kind="stable")
    distinct = np.diff(objective[order]) > 1e-9
    assert distinct.sum() >= 7
    assert np.all(np.diff(decrease[order])[distinct] > 0)
    slope, intercept = np.polyfit(objective, decrease / (2 * eta), 1)
    assert slope == pytest.approx(1.0, abs=1e-3)


def test_public_names_resolve():
    import curteach_teaching
    from curteach_teaching import difficulty

    for name in curteach_teaching.__all__:
        assert getattr(curteach_teaching, name) is not None, name
    for name in ("shortest_path_teacher_difficulty", "tsp_teacher_difficulty", "teacher_log_difficulty"):
        assert callable(getattr(difficulty, name)) and name not in curteach_teaching.__all__  # helpers stay home


# ------------------------------------------------------------------------------------- navigation teacher difficulty


@pytest.fixture(scope="module")
def navigation_splits():
    """The training splits of tiny shortest-path and TSP datasets."""
    return [
        generate_dataset("shortest_path", {"train": 2}, seed=5, workers=1, progress=False)["train"],
        generate_dataset("tsp", {"train": 6}, seed=5, workers=1, progress=False)["train"],
    ]


def test_shortest_path_difficulty_formula():
    goals = np.array([1, 2, 2, 1])
    paths = np.array([1, 3, 1, 2])
    reward = np.array([-2, 4, 6, 0])
    # denominators reward - (-2) + 1 = [1, 7, 9, 3]; d = [1, 6/7, 2/9, 2/3]
    d = np.array([1, 6 / 7, 2 / 9, 2 / 3])
    np.testing.assert_allclose(shortest_path_teacher_difficulty(goals, paths, reward, "paper"), np.log(d))
    normalised = (d - 2 / 9) / (1 - 2 / 9)
    np.testing.assert_allclose(shortest_path_teacher_difficulty(goals, paths, reward), np.log(normalised + 1e-3))
    original = shortest_path_teacher_difficulty(goals, paths, reward)
    assert original.min() == pytest.approx(np.log(1e-3)) and original.max() == pytest.approx(np.log(1.001))
    # reference minimum from a training split
    np.testing.assert_allclose(
        shortest_path_teacher_difficulty([1], [1], [0], "paper", reference_min_reward=-2), [np.log(1 / 3)]
    )
    with pytest.raises(ValueError, match="reference_min"):
        shortest_path_teacher_difficulty([1], [1], [-5], "paper", reference_min_reward=-2)
    with pytest.raises(ValueError, match="variant must be one of"):
        shortest_path_teacher_difficulty(goals, paths, reward, "other")


def test_tsp_difficulty_formulas():
    goals = np.array([2, 3, 4])
    reward = np.array([-4, -8, -12])
    greedy = np.array([-4, -10, -13])
    # original: goals / (reward + 12 + 1) = [2/9, 3/5, 4/1]
    d = np.array([2 / 9, 3 / 5, 4.0])
    normalised = (d - d.min()) / (d.max() - d.min())
    np.testing.assert_allclose(tsp_teacher_difficulty(goals, reward), np.log(normalised + 1e-3))
    # paper: reward - greedy_gap = greedy = [-4, -10, -13], shifted: [10, 4, 1]; d = [2/10, 3/4, 4/1]
    np.testing.assert_allclose(tsp_teacher_difficulty(goals, reward, greedy, "paper"), np.log([0.2, 0.75, 4.0]))
    with pytest.raises(ValueError, match="needs greedy_reward"):
        tsp_teacher_difficulty(goals, reward, variant="paper")
    # all equal: the uniform value log(1.001)
    np.testing.assert_allclose(minmax_log([2.0, 2.0]), np.log([1.001, 1.001]))


def test_difficulty_of_a_split(navigation_splits):
    for split in navigation_splits:
        scores = teacher_log_difficulty(split)
        assert scores.shape == (split.n_demos,) and np.all(np.isfinite(scores))
        assert scores.min() == pytest.approx(np.log(1e-3))
        assert np.all(np.isfinite(teacher_log_difficulty(split, "paper")))
