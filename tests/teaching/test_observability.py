"""Limited observability (B, k): refresh schedule, smoothing, exactness for k = inf, and the Fig. 5 experiment."""

import numpy as np
import pytest

from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.learners import MaxEntIRLLearner
from curteach_teaching.sweeps.sweep import run_seed_sequence
from curteach_teaching.teaching.observability import ProbedPolicyView, parse_observability

LAYOUT_SEED = 1  # the road these tests observe on: car_road(LAYOUT_SEED)


def test_exact_view_refreshes_every_b_steps(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert_rho = road.mdp, road.expert_rho
    learner = MaxEntIRLLearner(mdp, learning_rate=0.17)
    view = ProbedPolicyView(learner, refresh_every=3, probes_per_state=None)
    seen = []
    for t in range(7):
        view.at_step(t)
        seen.append(view.action_log_probabilities().copy())
        if t in (0, 3, 6):
            np.testing.assert_array_equal(seen[-1], learner.log_policy)  # B=3: fresh at t = 0, 3, 6
        else:
            np.testing.assert_array_equal(seen[-1], seen[-2])  # stale in between
        learner.update(expert_rho[5], int(mdp.start_states[5]))
    assert view.n_refreshes == 3
    assert not np.array_equal(seen[2], learner.log_policy)


def test_finite_probes_smoothing_and_seed(car_road):
    mdp = car_road(LAYOUT_SEED).mdp
    learner = MaxEntIRLLearner(mdp)
    k, alpha = 20, 0.5
    a = ProbedPolicyView(learner, 1, k, np.random.default_rng(3), smoothing=alpha)
    b = ProbedPolicyView(learner, 1, k, np.random.default_rng(3), smoothing=alpha)
    estimate = a.estimate()
    np.testing.assert_array_equal(estimate, b.estimate())
    np.testing.assert_allclose(np.exp(estimate).sum(axis=1), 1.0)
    counts = np.exp(estimate) * (k + 3 * alpha) - alpha  # invert (n + alpha)/(k + A alpha)
    np.testing.assert_allclose(counts, np.rint(counts), atol=1e-9)
    assert np.all(np.rint(counts).sum(axis=1) == k)
    assert np.isfinite(estimate).all()  # zero counts are smoothed, never log 0
    # many probes converge to the policy
    big = ProbedPolicyView(learner, 1, 200_000, np.random.default_rng(0)).estimate()
    np.testing.assert_allclose(np.exp(big), learner.policy, atol=0.01)


def test_bad_settings():
    with pytest.raises(ValueError, match="refresh_every"):
        ProbedPolicyView(None, 0, None)
    with pytest.raises(ValueError, match="probes_per_state"):
        ProbedPolicyView(None, 1, 0)
    tabular = type("Tabular", (), {"action_log_probabilities": lambda self: np.zeros((2, 2))})()
    with pytest.raises(ValueError, match="rng"):
        ProbedPolicyView(tabular, 1, 5)
    with pytest.raises(ValueError, match="cannot probe a NoneType"):
        ProbedPolicyView(None, 1, 5)
    assert parse_observability("40:inf") == (40, None)
    assert parse_observability("1:100") == (1, 100)
    for text in ("40", "0:inf", "a:b", "1:-3"):
        with pytest.raises(ValueError, match="B"):
            parse_observability(text)


def test_full_observability_equals_cur():
    small = dict(steps=8, target_steps=20, pretrain_steps=20)
    seeds = run_seed_sequence(7, 0)
    plain = CarIRLExperiment(teachers=("Cur",), **small).run(0, seeds)
    probed = CarIRLExperiment(observability=((1, None), (2, 5)), **small).run(0, run_seed_sequence(7, 0))
    assert probed.curves.keys() == {"Cur B=1 k=inf", "Cur B=2 k=5"}
    np.testing.assert_array_equal(probed.curves["Cur B=1 k=inf"], plain.curves["Cur"])
    np.testing.assert_array_equal(probed.records["picks"]["Cur B=1 k=inf"], plain.records["picks"]["Cur"])
    assert probed.extras["crash_step"] == plain.extras["crash_step"]
    assert np.isfinite(probed.curves["Cur B=2 k=5"]).all()
