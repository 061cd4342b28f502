"""SCOT (curteach_teaching.teaching.scot) and the bec variant of the Scot teacher."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from curteach_envs.tabular import TabularMDP
from curteach_teaching.demonstrations import DemonstrationPool
from curteach_teaching.planning import feature_expectations, hard_value_iteration, state_feature_expectations
from curteach_teaching.teaching import scot as S
from curteach_teaching.teaching.teachers import ScotTeacher

GAMMA = 0.9
TRUE_W = np.array([2.0, 1.0])
# states: 0 s0, 1 s1, 2 s3 (starts); 3 m (reached from s3 only); 4 X, 5 Y, 6 Z (absorbing)
S0, S1, S3, M, X, Y, Z = range(7)


def hand_mdp() -> TabularMDP:
    """Two actions. s0: X or Y; s1: X or Z; s3: both to m; m: Y or Z. Features X (1, 0), Y (0, 1), else 0.

    With w = (2, 1) the optimal actions are s0 -> X, s1 -> X, m -> Y; s3 is a tie. The BEC's half-spaces (times
    gamma): s0 ``w1 - w2 >= 0``, s1 ``w1 >= 0``, m ``w2 >= 0``; s1's follows from the other two, so the minimal
    BEC is ``{(1, -1) / sqrt 2, (0, 1)}``, and ``(0, 1)`` arises only at m, which is not a start.
    """
    successor = {S0: (X, Y), S1: (X, Z), S3: (M, M), M: (Y, Z), X: (X, X), Y: (Y, Y), Z: (Z, Z)}
    T = np.zeros((7 * 2, 7))
    for s, (a0, a1) in successor.items():
        T[2 * s, a0] = T[2 * s + 1, a1] = 1.0
    phi = np.zeros((7, 2))
    phi[X], phi[Y] = (1.0, 0.0), (0.0, 1.0)
    init = np.zeros(7)
    init[[S0, S1, S3]] = 1 / 3
    return TabularMDP(transitions=T, reward=phi @ TRUE_W, features=phi, initial_state_dist=init, gamma=GAMMA,
                      horizon=2)


def hand_candidates():
    """One optimal demonstration per start (2 steps, the second at an absorbing state or at m)."""
    states = np.array([[S0, X], [S1, X], [S3, M]])
    actions = np.array([[0, 0], [0, 0], [0, 0]])
    return states, actions


def test_hand_mdp_bec_and_cover():
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    np.testing.assert_array_equal(expert.policy[[S0, S1, M]], [[1, 0], [1, 0], [1, 0]])
    np.testing.assert_array_equal(expert.policy[S3], [0.5, 0.5])

    raw, nonzero = S.bec_constraints(mdp, expert.policy, mdp.features)
    # s0, s1, m give one normal each; s3's tie gives two zero normals
    expected_raw = GAMMA * np.array([[1.0, -1.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(raw, expected_raw, atol=1e-15)
    np.testing.assert_array_equal(nonzero, [True, True, False, False, True])
    assert np.all(raw @ TRUE_W >= 0)

    units, index = S.unique_directions(raw, nonzero=nonzero)
    np.testing.assert_array_equal(index, [0, 1, 4])
    bec = S.minimal_bec(mdp, expert.policy, mdp.features)
    np.testing.assert_allclose(bec, [[1 / np.sqrt(2), -1 / np.sqrt(2)], [0.0, 1.0]], atol=1e-12)

    result = S.scot(mdp, expert.policy, *hand_candidates())
    assert (result.n_raw, result.n_unique, len(result.bec)) == (5, 3, 2)
    assert result.picks == [0, 2] and result.complete  # s0 first (a tie of gains, the first wins), then s3


def test_bec_uses_every_non_terminal_state_not_only_the_starts():
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    bec = S.minimal_bec(mdp, expert.policy, mdp.features)
    assert any(np.allclose(row, [0.0, 1.0]) for row in bec)  # m's half-space; m is no start
    # built over the starts alone, the BEC would miss it
    mu_sa = S.state_action_feature_expectations(mdp, expert.policy, mdp.features)
    at_starts = [mu_sa[s, a] - mu_sa[s, b] for s in mdp.start_states for a in range(2) for b in range(2)
                 if a != b and expert.policy[s, a] > 0]
    units, _ = S.unique_directions(np.array(at_starts))
    assert len(units) == 2 and not any(np.allclose(row, [0.0, 1.0]) for row in units)


def test_cover_reports_what_no_candidate_covers():
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    states, actions = hand_candidates()
    result = S.scot(mdp, expert.policy, states[:2], actions[:2])  # without s3's demonstration
    assert result.picks == [0]
    np.testing.assert_array_equal(result.uncovered, [False, True])
    assert not result.complete


def test_demonstration_constraints_shapes_and_absorbing_states():
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    mu_sa = S.state_action_feature_expectations(mdp, expert.policy, mdp.features)
    units, valid = S.demonstration_constraints(mdp, mu_sa, *hand_candidates())
    assert units.shape == (3, 2, 1, 2) and valid.shape == (3, 2, 1)
    np.testing.assert_array_equal(valid[:, :, 0], [[True, False], [True, False], [False, True]])
    np.testing.assert_allclose(units[2, 1, 0], [0.0, 1.0])
    with pytest.raises(ValueError, match="actions must be in"):
        S.demonstration_constraints(mdp, mu_sa, np.array([[S0]]), np.array([[2]]))


def test_state_feature_expectations_match_the_forward_pass():
    from curteach_envs.car import car_tabular, sample_road

    mdp = car_tabular(sample_road(np.random.default_rng(3)))
    expert = hard_value_iteration(mdp)
    states = np.array([0, 1, 7, 250, 799, 800])
    forward = feature_expectations(mdp, expert.policy, mdp.state_indicator(states))
    np.testing.assert_allclose(state_feature_expectations(mdp, expert.policy)[states], forward, atol=1e-12)


def test_quadratic_feature_map():
    phi = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    psi = S.feature_map(phi, "quadratic")
    assert psi.shape == (2, 3 + 6)
    i, j = np.triu_indices(3)
    np.testing.assert_array_equal(psi[:, :3], phi)
    np.testing.assert_array_equal(psi[0, 3:], [1, 2, 3, 4, 6, 9])
    np.testing.assert_array_equal(psi[1, 3:], phi[1, i] * phi[1, j])
    # the quadratic learner's reward is linear in the lift: [t1, t2 t2^T (off-diagonals doubled)]
    t1, t2 = np.array([0.3, -1.0, 2.0]), np.array([1.5, 0.5, -0.25])
    outer = np.outer(t2, t2)
    weights = np.concatenate([t1, np.where(i == j, 1.0, 2.0) * outer[i, j]])
    np.testing.assert_allclose(psi @ weights, phi @ t1 + (phi @ t2) ** 2)
    with pytest.raises(ValueError, match="feature map must be one of"):
        S.feature_map(phi, "cubic")


# ------------------------------------------------------------------ redundancy
def _extreme_rays(normals: np.ndarray) -> list:
    """Extreme rays of the pointed cone ``{w : normals @ w >= 0}`` in 3-D: feasible lines where two planes meet."""
    rays = []
    for i, j in itertools.combinations(range(len(normals)), 2):
        line = np.cross(normals[i], normals[j])
        if np.linalg.norm(line) < 1e-12:
            continue
        for ray in (line, -line):
            if np.all(normals @ ray >= -1e-10):
                rays.append(ray / np.linalg.norm(ray))
    return rays


def _redundant_by_brute_force(normals: np.ndarray, k: int) -> bool:
    """``normals[k]`` is redundant iff it is non-negative on every extreme ray of the cone of the others."""
    others = np.delete(normals, k, axis=0)
    return all(normals[k] @ ray >= -1e-9 for ray in _extreme_rays(others))


@pytest.mark.parametrize("seed", range(25))
def test_redundancy_removal_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    interior = rng.normal(size=3)
    normals = rng.normal(size=(int(rng.integers(4, 11)), 3))
    normals *= np.sign(normals @ interior)[:, None]  # a full-dimensional cone: ``interior`` satisfies all strictly
    units = normals / np.linalg.norm(normals, axis=1, keepdims=True)
    kept = S.remove_redundant(units)
    brute = [k for k in range(len(units)) if not _redundant_by_brute_force(units, k)]
    np.testing.assert_array_equal(kept, brute)
    assert len(kept) >= 3  # a pointed 3-D cone has at least three facets


@pytest.mark.parametrize("seed", range(5))
def test_scaling_the_constraints_changes_nothing(seed):
    rng = np.random.default_rng(100 + seed)
    interior = rng.normal(size=4)
    normals = rng.normal(size=(12, 4))
    normals *= np.sign(normals @ interior)[:, None]  # a full-dimensional cone, with redundant half-spaces
    scaled = normals * 10.0 ** rng.uniform(-9, 9, size=(12, 1))
    kept = S.remove_redundant(normals)
    assert 4 <= len(kept) < 12
    np.testing.assert_array_equal(S.remove_redundant(scaled), kept)
    units, index = S.unique_directions(normals)
    scaled_units, scaled_index = S.unique_directions(scaled)
    np.testing.assert_array_equal(index, scaled_index)
    np.testing.assert_allclose(units, scaled_units, atol=1e-12)


@pytest.mark.parametrize("factor", [1e-7, 3.0, 1e7])
def test_scaling_the_features_changes_nothing(factor):
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    scaled = mdp.replace(features=mdp.features * factor)
    assert S.scot(scaled, expert.policy, *hand_candidates()).picks == [0, 2]
    np.testing.assert_allclose(S.minimal_bec(scaled, expert.policy, scaled.features),
                               S.minimal_bec(mdp, expert.policy, mdp.features), atol=1e-12)


def test_duplicates_and_zeros_are_dropped():
    base = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 0.0], [0.0, 1.0 + 1e-9], [-1.0, 0.0]])
    units, index = S.unique_directions(base)
    np.testing.assert_array_equal(index, [0, 1, 5])
    np.testing.assert_allclose(units, [[1, 0], [0, 1], [-1, 0]])
    # a short normal is still a direction; only the nonzero mask or an exact zero drops a row
    _, index = S.unique_directions(np.array([[1.0, 0.0], [0.0, 1e-7], [1.0, 1.0]]))
    np.testing.assert_array_equal(index, [0, 1, 2])
    # near-duplicates are compared with the normals kept: a chain 0.9 tol apart keeps every other one
    tol = 1e-6
    angles = np.array([0.0, 0.9, 1.8, 2.7]) * tol
    _, index = S.unique_directions(np.stack([np.cos(angles), np.sin(angles)], axis=1), tol)
    np.testing.assert_array_equal(index, [0, 2])


@pytest.mark.parametrize(
    "normals, expected",
    [
        (np.array([[1.0, 0.0, 0.0]]), [0]),  # one half-space
        (np.array([[1.0, 2.0], [-1.0, -2.0]]), [0, 1]),  # a hyperplane: a and -a, neither implies the other
        (np.zeros((3, 3)), []),  # nothing at all
        # 3 free dimensions; the third half-space follows from the first two
        (np.array([[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]), [0, 1]),
        (np.zeros((0, 4)), []),
    ],
)
def test_the_lp_is_never_unbounded(normals, expected):
    kept = S.remove_redundant(normals)  # raises RuntimeError on any LP status but "optimal"
    np.testing.assert_array_equal(kept, expected)


@pytest.mark.parametrize("seed", range(10))
def test_random_degenerate_sets_solve(seed):
    rng = np.random.default_rng(200 + seed)
    basis = rng.normal(size=(2, 6))
    normals = rng.normal(size=(15, 2)) @ basis  # all in a 2-D subspace of R^6: an unbounded cone without a box
    normals = np.vstack([normals, -normals[:3]])
    kept = S.remove_redundant(normals)
    # the result is minimal and complete: each kept half-space is needed by the others kept, each removed one
    # follows from them
    for k in range(len(normals)):
        others = normals[[j for j in kept if j != k]]
        needed = S._lp_minimum(normals[k], others, 1.0) < -S.REDUNDANCY_TOL * np.linalg.norm(normals[k])
        assert needed == (k in kept)


def tie_mdp() -> TabularMDP:
    """s0 as in :func:`hand_mdp` (X or Y), and a start t whose two actions tie under w = (2, 1) with different
    features: P (1, 0) and Q (0, 2). The BEC holds the hyperplane ``w1 = 2 w2`` as two half-spaces."""
    s0, t, x, y, p, q = range(6)
    successor = {s0: (x, y), t: (p, q), x: (x, x), y: (y, y), p: (p, p), q: (q, q)}
    T = np.zeros((6 * 2, 6))
    for s, (a0, a1) in successor.items():
        T[2 * s, a0] = T[2 * s + 1, a1] = 1.0
    phi = np.zeros((6, 2))
    phi[x], phi[y], phi[p], phi[q] = (1, 0), (0, 1), (1, 0), (0, 2)
    init = np.zeros(6)
    init[[s0, t]] = 0.5
    return TabularMDP(transitions=T, reward=phi @ TRUE_W, features=phi, initial_state_dist=init, gamma=GAMMA,
                      horizon=2)


def test_a_tie_with_different_features_needs_both_actions_demonstrated():
    mdp = tie_mdp()
    expert = hard_value_iteration(mdp)
    np.testing.assert_array_equal(expert.policy[1], [0.5, 0.5])
    bec = S.minimal_bec(mdp, expert.policy, mdp.features)
    expected = np.array([[1 / np.sqrt(2), -1 / np.sqrt(2)], [1 / np.sqrt(5), -2 / np.sqrt(5)],
                         [-1 / np.sqrt(5), 2 / np.sqrt(5)]])
    np.testing.assert_allclose(bec, expected, atol=1e-12)
    states = np.array([[0, 2], [1, 4], [1, 5]])  # s0 -> X; t -> P; t -> Q
    actions = np.array([[0, 0], [0, 0], [1, 0]])
    result = S.scot(mdp, expert.policy, states, actions)
    assert result.picks == [0, 1, 2] and result.complete
    partial = S.scot(mdp, expert.policy, states[:2], actions[:2])  # t's second action never shown
    assert partial.picks == [0, 1]
    np.testing.assert_array_equal(partial.uncovered, [False, False, True])


def test_the_policy_must_be_optimal_and_tie_uniform():
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    soft = np.full_like(expert.policy, 0.5)
    soft[S0] = (0.7, 0.3)
    with pytest.raises(ValueError, match="policy row 0 is not uniform"):
        S.scot(mdp, soft, *hand_candidates())
    zero = expert.policy.copy()
    zero[M] = 0.0
    with pytest.raises(ValueError, match=f"policy row {M} is not uniform"):
        S.minimal_bec(mdp, zero, mdp.features)
    with pytest.raises(ValueError, match="policy must have shape"):
        S.scot(mdp, expert.policy[:3], *hand_candidates())


def test_no_candidates_cover_nothing():
    mdp = hand_mdp()
    expert = hard_value_iteration(mdp)
    result = S.scot(mdp, expert.policy, np.zeros((0, 2), dtype=np.int64), np.zeros((0, 2), dtype=np.int64))
    assert result.picks == [] and result.uncovered.tolist() == [True, True]
    with pytest.raises(ValueError, match="states must be in"):
        S.scot(mdp, expert.policy, np.array([[-1, 0]]), np.array([[0, 0]]))


def test_remove_redundant_rejects_bad_input():
    with pytest.raises(ValueError, match="box must be > 0"):
        S.remove_redundant(np.eye(2), box=0.0)
    with pytest.raises(ValueError, match="2-D"):
        S.remove_redundant(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        S.unique_directions(np.array([[np.nan, 1.0]]))


# ------------------------------------------------------------------ the car
@pytest.fixture(scope="module")
def car_setup():
    from curteach_teaching.experiments.car.irl import CarIRLExperiment
    from curteach_teaching.sweeps.backends import run_seed_sequence

    return CarIRLExperiment().build_setup(run_seed_sequence(0, 0))


def _pool_candidates(pool: DemonstrationPool):
    K, n, L = pool.actions.shape
    return pool.states.reshape(K * n, L), pool.actions.reshape(K * n, L)


@pytest.fixture(scope="module")
def car_roads():
    """The setups of runs 0-4 of a car-irl sweep with seed 0 (five roads)."""
    from curteach_teaching.experiments.car.irl import CarIRLExperiment
    from curteach_teaching.sweeps.backends import run_seed_sequence

    return [CarIRLExperiment().build_setup(run_seed_sequence(0, i)) for i in range(5)]


@pytest.mark.parametrize("road", range(5))
def test_car_true_reward_lies_strictly_inside_the_quadratic_bec(car_roads, road):
    car_setup = car_roads[road]
    mdp, expert = car_setup.mdp, car_setup.expert
    psi = S.feature_map(mdp.features, "quadratic")
    live = ~mdp.absorbing
    # the original's reward minus its constant 0.5 (equal for every policy: all episodes have L steps)
    weights, *_ = np.linalg.lstsq(psi[live], mdp.reward[live] - 0.5, rcond=None)
    np.testing.assert_allclose(psi[live] @ weights, mdp.reward[live] - 0.5, atol=1e-9)
    bec = S.minimal_bec(mdp, expert.policy, psi)
    assert (bec @ weights).min() > 0.3
    result = S.scot(mdp, expert.policy, *_pool_candidates(car_setup.pool), kind="quadratic")
    assert result.complete and 0 < len(result.picks) <= len(result.bec)


@pytest.mark.parametrize("road", range(5))
def test_car_linear_bec_has_no_interior(car_roads, road):
    """The car's true reward is not linear in phi (HOV with police), so no linear w makes the expert's choices
    strictly optimal: the largest slack ``t`` with ``bec @ w >= t`` in the unit box is 0."""
    from scipy.optimize import linprog

    mdp, expert = car_roads[road].mdp, car_roads[road].expert
    bec = S.minimal_bec(mdp, expert.policy, mdp.features)
    d = bec.shape[1]
    objective = np.zeros(d + 1)
    objective[-1] = -1.0
    result = linprog(objective, A_ub=np.hstack([-bec, np.ones((len(bec), 1))]), b_ub=np.zeros(len(bec)),
                     bounds=[(-1, 1)] * d + [(None, 1)], method="highs")
    assert result.status == 0 and -result.fun < 1e-9


def test_car_cover_is_invariant_to_feature_scale(car_setup):
    """Scaling psi scales every half-space normal alike (not so for the quadratic lift of a scaled phi)."""
    mdp, expert = car_setup.mdp, car_setup.expert
    scaled = mdp.replace(features=mdp.features * 2.5)
    a = S.scot(mdp, expert.policy, *_pool_candidates(car_setup.pool), kind="linear")
    b = S.scot(scaled, expert.policy, *_pool_candidates(car_setup.pool), kind="linear")
    assert a.picks == b.picks and a.n_unique == b.n_unique
    np.testing.assert_allclose(a.bec, b.bec, atol=1e-9)


def test_scot_teacher_bec_batch_and_errors(car_setup):
    pool = car_setup.pool
    teacher = ScotTeacher(pool.start_states, None, np.random.default_rng(0), "bec", mdp=car_setup.mdp,
                          expert_policy=car_setup.expert.policy, pool=pool, feature_map="quadratic")
    n = pool.n_per_start
    assert teacher.batch == [p // n for p in teacher.result.picks]
    picks = [teacher.select(None, t) for t in range(len(teacher.batch) + 5)]
    assert picks[: len(teacher.batch)] == [int(pool.start_states[k]) for k in teacher.batch]
    with pytest.raises(ValueError, match="variant must be one of"):
        ScotTeacher(pool.start_states, None, np.random.default_rng(0), "exact")
    with pytest.raises(ValueError, match="needs mdp, expert_policy and pool"):
        ScotTeacher(pool.start_states, None, np.random.default_rng(0), "bec")
    with pytest.raises(ValueError, match="feature expectations"):
        ScotTeacher(pool.start_states, None, np.random.default_rng(0))


def test_car_irl_with_bec_scot_is_deterministic():
    from curteach_teaching.experiments.car.irl import CarIRLExperiment

    experiment = CarIRLExperiment(steps=30, teachers=("Agn", "Scot"), scot_variant="bec")
    first = experiment.run(0, np.random.SeedSequence(11))
    second = experiment.run(0, np.random.SeedSequence(11))
    np.testing.assert_array_equal(first.curves["Scot"], second.curves["Scot"])
    np.testing.assert_array_equal(first.records["picks"]["Scot"], second.records["picks"]["Scot"])
    assert first.extras["scot_batch_size"] == second.extras["scot_batch_size"] > 0
    assert first.extras["scot_uncovered"] == 0
    original = CarIRLExperiment(steps=30, teachers=("Agn", "Scot")).run(0, np.random.SeedSequence(11))
    np.testing.assert_array_equal(first.curves["Agn"], original.curves["Agn"])  # Scot's variant changes only Scot


def test_scot_settings_keep_the_original_fingerprint():
    from curteach_teaching.experiments.car.irl import CarIRLExperiment

    default = CarIRLExperiment().settings()
    assert "scot_variant" not in default and "scot_feature_map" not in default
    bec = CarIRLExperiment(scot_variant="bec").settings()
    assert bec["scot_variant"] == "bec" and bec["scot_feature_map"] == "quadratic"
    assert CarIRLExperiment(scot_variant="bec", reward_model="linear").settings()["scot_feature_map"] == "linear"
    with pytest.raises(ValueError, match="scot_variant must be one of"):
        CarIRLExperiment(scot_variant="real")
    with pytest.raises(ValueError, match="scot_feature_map must be one of"):
        CarIRLExperiment(scot_variant="bec", scot_feature_map="cubic")


def test_car_irl_command_with_bec_scot(tmp_path, capsys):
    import json

    from curteach_teaching.cli import main

    out = tmp_path / "bec"
    args = ["car-irl", "--runs", "2", "--steps", "12", "--teachers", "Agn,Scot", "--scot-variant", "bec",
            "--workers", "1", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    assert "Scot's batch: median" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["scot_variant"] == "bec" and report["scot_batch_size"]["min"] > 0
    with pytest.raises(SystemExit) as stop:
        main(["car-irl", "--scot-variant", "exact", "--out", str(tmp_path / "x")])
    assert stop.value.code == 2
