"""The curriculum plug-in for imitation's BC: pacing, ranking, batches, peeking, determinism, a seals env."""

import gymnasium as gym
import numpy as np
import pytest
import seals  # noqa: F401  (registers the seals/ environments)
import torch as th
from imitation.algorithms.bc import BC
from imitation.data.types import Trajectory

from curteach_teaching.curriculum import CurriculumBC, FullPacing, LinearPacing, silent_logger
from curteach_teaching.curriculum.selection import CurriculumSelection

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")


def test_linear_pacing_values():
    pacing = LinearPacing()  # a = 0.8, b = 0.5: X_e = int(50 + min(1, e / 8) * 50) for N = 100, E = 10
    assert [pacing(e, 10, 100) for e in range(1, 11)] == [56, 62, 68, 75, 81, 87, 93, 100, 100, 100]
    assert LinearPacing(a=1.0, b=0.0)(1, 40, 16900) == int(16900 / 40)
    assert LinearPacing(b=0.0)(1, 1000, 10) == 1  # never empty
    assert FullPacing()(3, 10, 7) == 7
    with pytest.raises(ValueError, match="a must be"):
        LinearPacing(a=0.0)
    with pytest.raises(ValueError, match=r"b must be in \[0, 1\]"):
        LinearPacing(b=1.5)
    with pytest.raises(ValueError, match=r"epoch must be in \[1, n_epochs = 10\]"):
        pacing(0, 10, 100)


def test_ranking_by_variant(car_pool, bc_trainer):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()
    N = len(demos)
    teacher = np.arange(N, dtype=float) % 7  # given per-demonstration log Psi^E
    trainer = bc_trainer(mdp)
    table = trainer.policy.log_policy_table()
    learner = -np.array([table[d.obs[:-1], d.acts].sum() for d in demos])
    pacing = lambda e, E, n: 10  # noqa: E731
    for variant, preference in (("Cur", learner - teacher), ("Cur-L", learner), ("Cur-T", -teacher)):
        curriculum = CurriculumBC(trainer, demos, variant=variant, teacher=teacher, pacing=pacing)
        selected, pref, _ = curriculum.select(1, 5)
        np.testing.assert_allclose(pref, preference, atol=1e-9)
        assert np.array_equal(selected, np.argsort(-preference, kind="stable")[:10])
    agn = CurriculumBC(trainer, demos, variant="Agn")
    assert np.array_equal(agn.select(1, 5)[0], np.arange(N))
    # a tabular teacher policy as a callable gives log Psi^E = -sum log pi^E
    by_policy = CurriculumBC(trainer, demos, variant="Cur-T", teacher=lambda obs, acts: log_expert[obs, acts])
    expected = -np.array([log_expert[d.obs[:-1], d.acts].sum() for d in demos])
    np.testing.assert_allclose(by_policy.teacher_difficulty, expected)


def test_training_logs_and_keeps_policy_and_optimizer(car_pool, bc_trainer):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()
    trainer = bc_trainer(mdp, optimizer=th.optim.Adam, lr=0.05)
    optimizer, policy = trainer.optimizer, trainer.policy
    curriculum = CurriculumBC(trainer, demos, teacher=lambda obs, acts: log_expert[obs, acts])
    records = curriculum.train(5)
    assert trainer.optimizer is optimizer and trainer.policy is policy
    assert all(len(state["exp_avg"]) for state in optimizer.state.values())
    N = len(demos)
    assert [r.n_selected for r in records] == [LinearPacing()(e, 5, N) for e in range(1, 6)]
    assert [r.fraction for r in records] == [r.n_selected / N for r in records]
    assert records[0].learner_difficulty_all_mean > records[-1].learner_difficulty_all_mean  # it learns
    assert curriculum.selection_matrix().sum(axis=1).tolist() == [r.n_selected for r in records]
    table = curriculum.log_table()
    assert table["epoch"].tolist() == [1, 2, 3, 4, 5] and "learner_difficulty_mean" in table
    more = curriculum.train(1)
    assert more[0].epoch == 6 and len(curriculum.history) == 6


@pytest.mark.parametrize("remainder", ["partial", "drop"])
def test_batches_remainder_and_peek(car_pool, remainder, bc_trainer, count_training_pairs):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()[:7]  # 70 transitions
    trainer = bc_trainer(mdp, batch_size=32)
    seen = count_training_pairs(trainer)
    curriculum = CurriculumBC(trainer, demos, variant="Agn", remainder=remainder)
    record = curriculum.train(1)[0]
    # set_demonstrations peeks at the first batch (one extra __iter__); training still sees every batch once
    if remainder == "partial":
        assert seen == [32, 32, 6] and record.n_transitions == 70 and record.n_batches == 3
    else:
        assert seen == [32, 32] and record.n_transitions == 64 and record.n_batches == 2
    assert trainer.batch_size == 32 and trainer.minibatch_size == 32


def test_selection_smaller_than_batch_and_minibatches(car_pool, bc_trainer, count_training_pairs):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()[:3]  # 30 transitions < batch size 64
    trainer = bc_trainer(mdp, batch_size=64, minibatch_size=16)
    seen = count_training_pairs(trainer)
    record = CurriculumBC(trainer, demos, variant="Agn").train(1)[0]
    assert seen == [30] and record.n_batches == 1
    assert (trainer.batch_size, trainer.minibatch_size) == (64, 16)  # restored
    seen.clear()
    CurriculumBC(trainer, pool.all_trajectories()[:15], variant="Agn").train(1)  # 150 = 2 x 64 + 22
    assert seen == [16] * 8 + [22]


def test_same_seed_same_result_whatever_the_global_rng(car_pool, bc_trainer):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()

    def run(global_seed):
        th.manual_seed(global_seed)  # must not matter
        np.random.seed(global_seed)
        trainer = bc_trainer(mdp, seed=11)
        curriculum = CurriculumBC(trainer, demos, teacher=lambda obs, acts: log_expert[obs, acts])
        curriculum.train(3)
        return trainer.policy.theta_numpy(), curriculum.selection_matrix()

    theta_a, sel_a = run(1)
    theta_b, sel_b = run(2)
    assert np.array_equal(theta_a, theta_b) and np.array_equal(sel_a, sel_b)


def cliff_demonstrations(n, rng):
    env = gym.make("seals/CliffWorld7x4-v0").unwrapped
    T, R, H = env.transition_matrix, env.reward_matrix, env.horizon
    V = np.zeros(T.shape[0])
    policies = []
    for _ in range(H):  # finite-horizon hard value iteration
        Q = R[:, None] + T @ V
        policies.append(Q.argmax(axis=1))
        V = Q.max(axis=1)
    policies = policies[::-1]
    demos = []
    for _ in range(n):
        state = int(rng.choice(T.shape[0], p=env.initial_state_dist))
        states, actions = [state], []
        for t in range(H):
            action = int(policies[t][state]) if rng.random() > 0.2 else int(rng.integers(4))  # a noisy expert
            state = int(rng.choice(T.shape[0], p=T[state, action]))
            states.append(state)
            actions.append(action)
        obs = env.observation_matrix[states].astype(np.float32)
        demos.append(Trajectory(obs=obs, acts=np.array(actions), infos=None, terminal=True))
    return env, demos


@pytest.mark.parametrize("variant", ["Cur", "Cur-L", "Cur-T", "Agn"])
def test_seals_cliff_world_with_imitations_default_policy(variant):
    rng = np.random.default_rng(5)
    env, demos = cliff_demonstrations(30, rng)
    trainer = BC(
        observation_space=gym.spaces.Box(-np.inf, np.inf, (28,), np.float32), action_space=gym.spaces.Discrete(4),
        rng=np.random.default_rng(0), batch_size=16, custom_logger=silent_logger(),
    )
    teacher = rng.random(len(demos))  # e.g. a task-specific teacher score per demonstration
    curriculum = CurriculumBC(trainer, demos, variant=variant, teacher=None if variant in ("Cur-L", "Agn") else teacher)
    before = curriculum.learner_difficulty().mean()
    records = curriculum.train(8)
    assert curriculum.learner_difficulty().mean() < before
    assert records[-1].n_selected == 30
    if variant != "Agn":
        assert records[0].n_selected == LinearPacing()(1, 8, 30) < 30


def test_bad_input(car_pool, bc_trainer):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()
    trainer = bc_trainer(mdp)
    with pytest.raises(ValueError, match="needs at least one demonstration"):
        CurriculumBC(trainer, [])
    with pytest.raises(ValueError, match="unknown curriculum 'Omn'; available: Cur, Cur-L, Cur-T, Agn"):
        CurriculumBC(trainer, demos, variant="Omn")
    with pytest.raises(ValueError, match="needs a teacher"):
        CurriculumBC(trainer, demos, variant="Cur")
    with pytest.raises(ValueError, match=r"shape \(80,\)"):
        CurriculumBC(trainer, demos, variant="Cur-T", teacher=np.zeros(3))
    with pytest.raises(ValueError, match="remainder"):
        CurriculumBC(trainer, demos, variant="Agn", remainder="pad")
    bad = Trajectory(obs=np.array([0, 2]), acts=np.array([5]), infos=None, terminal=True)
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        CurriculumBC(trainer, [bad], variant="Agn")
    with pytest.raises(ValueError, match="integer in"):
        CurriculumBC(trainer, demos, variant="Cur-L", pacing=lambda e, E, n: 0).train(1)
    with pytest.raises(ValueError, match="n_epochs"):
        CurriculumBC(trainer, demos, variant="Agn").train(0)


def test_zero_probability_steps_are_floored_per_step(car_pool, bc_trainer):
    """A step of probability 0 (or a NaN from a diverged policy) counts as ``min_log_prob``, the other steps as they
    are, for the learner, a teacher policy and a teacher callable alike."""
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()[:4]
    trainer = bc_trainer(mdp)
    table = trainer.policy.log_policy_table()
    steps = [table[d.obs[:-1], d.acts].astype(np.float64) for d in demos]
    zero_at = {0: 0, 1: 2}  # demo 0: its first step has probability 0; demo 1: its third step is NaN
    original = trainer.policy.evaluate_actions

    def broken(obs, acts):
        values, log_prob, entropy = original(obs, acts)
        log_prob = log_prob.clone()
        log_prob[0] = -th.inf
        log_prob[len(demos[0].acts) + 2] = th.nan
        return values, log_prob, entropy

    trainer.policy.evaluate_actions = broken
    floor = -50.0
    expected = []
    for i, s in enumerate(steps):
        s = s.copy()
        if i in zero_at:
            s[zero_at[i]] = floor
        expected.append(-s.sum())
    curriculum = CurriculumBC(trainer, demos, variant="Cur-T", teacher=trainer.policy, min_log_prob=floor)
    np.testing.assert_allclose(curriculum.learner_difficulty(), expected, rtol=1e-5)
    np.testing.assert_allclose(curriculum.teacher_difficulty, expected, rtol=1e-5)
    callable_teacher = CurriculumBC(
        trainer, demos, variant="Cur-T", min_log_prob=floor,
        teacher=lambda obs, acts: np.where(np.arange(len(acts)) == 0, -np.inf, table[obs, acts]),
    )
    first = steps[0].copy()
    first[0] = floor
    expected_callable = [-first.sum()] + [-s.sum() for s in steps[1:]]
    np.testing.assert_allclose(callable_teacher.teacher_difficulty, expected_callable, rtol=1e-5)
    with pytest.raises(ValueError, match="NaN"):
        CurriculumBC(trainer, demos, variant="Cur-T", teacher=lambda obs, acts: np.full(len(acts), np.nan))


def test_the_package_exports_the_selection_and_the_core():
    import curteach_teaching
    from curteach_teaching import curriculum, names
    from curteach_teaching.curriculum import core, pacing, selection, uses
    from curteach_teaching.curriculum.adapters import bc

    assert curriculum.CurriculumBC is bc.CurriculumBC and issubclass(CurriculumBC, core.Curriculum)
    for name in ("VARIANTS", "EpochRecord", "CurriculumSelection"):
        assert getattr(curriculum, name) is getattr(selection, name)
    for name in ("LinearPacing", "FullPacing"):
        assert getattr(curriculum, name) is getattr(pacing, name)
    assert curteach_teaching.Select is uses.Select and curteach_teaching.Weight is uses.Weight
    assert curriculum.VARIANTS is names.CURRICULUM_VARIANTS == ("Cur", "Cur-L", "Cur-T", "Agn")
    assert curteach_teaching.LinearPacing is LinearPacing and curteach_teaching.CurriculumBC is CurriculumBC
    assert curteach_teaching.CurriculumSelection is selection.CurriculumSelection


def test_adapter_seams_batches_and_one_epoch(car_pool, bc_trainer):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()[:7]  # 7 demonstrations of 10 transitions
    trainer = bc_trainer(mdp, batch_size=32)
    curriculum = CurriculumBC(trainer, demos, variant="Agn", rng=np.random.default_rng(3))
    groups = curriculum.epoch_batches(np.array([4, 1]))  # 20 transitions < 32: one batch of its size
    assert [g.size for g in groups] == [20]
    assert sorted(groups[0].tolist()) == list(range(10, 20)) + list(range(40, 50))
    groups = curriculum.epoch_batches(np.arange(7))
    assert [g.size for g in groups] == [32, 32, 6] and sorted(np.concatenate(groups).tolist()) == list(range(70))
    assert curriculum.train_batches(groups) == (70, 3)
    record = curriculum.train_epoch(1, 1)
    assert curriculum.history == [record] and (record.epoch, record.n_transitions, record.n_batches) == (1, 70, 3)


def test_the_adapter_and_its_selection_share_one_state(car_pool, bc_trainer):
    mdp, log_expert, pool = car_pool
    demos = pool.all_trajectories()[:6]
    trainer = bc_trainer(mdp)
    curriculum = CurriculumBC(trainer, demos, variant="Cur-T", teacher=np.arange(6.0))
    assert isinstance(curriculum.selection, CurriculumSelection) and curriculum.selection.variant == "Cur-T"
    assert curriculum.teacher_difficulty is curriculum.selection.teacher_difficulty
    curriculum.pacing = lambda e, E, n: 3
    assert curriculum.selection.pacing is curriculum.pacing
    assert curriculum.select(1, 1)[0].tolist() == [0, 1, 2]  # -log Psi^E: the easiest for the teacher first
    curriculum.train(2)
    assert curriculum.history is curriculum.selection.history and len(curriculum.history) == 2
    curriculum.history = []
    assert curriculum.selection_matrix().shape == (0, 6)


def test_a_real_policy_with_non_finite_weights_counts_as_the_floor(car_pool, bc_trainer):
    """No stub: the SB3 policies of the library with NaN weights (torch's distributions refuse NaN logits)."""
    from curteach_teaching.learners.networks import NavigationCNNPolicy

    mdp, _, pool = car_pool
    demos = pool.all_trajectories()[:3]
    trainer = bc_trainer(mdp)
    with th.no_grad():
        trainer.policy.theta.fill_(th.nan)
    curriculum = CurriculumBC(trainer, demos, variant="Cur-L", min_log_prob=-50.0)
    np.testing.assert_array_equal(curriculum.learner_difficulty(), [50.0 * len(d.acts) for d in demos])
    # finite weights whose outputs are NaN: the distribution's own check fires, and the steps count as the floor
    cnn = NavigationCNNPolicy.for_navigation(seed=0)
    with th.no_grad():  # large hidden units times weights of both signs: +inf and -inf in one sum, a NaN logit
        cnn.net.fc2.bias.fill_(1e30)
        cnn.net.head.weight.fill_(0.0)
        cnn.net.head.weight[:, 0] = 1e10
        cnn.net.head.weight[:, 1] = -1e10
    assert th.isnan(cnn.action_logits(th.zeros((1, *cnn.observation_space.shape)))).all()
    from curteach_teaching.curriculum.index import DemonstrationIndex
    from curteach_teaching.curriculum.scores import policy_difficulty

    obs = np.zeros((4, *cnn.observation_space.shape), dtype=np.float32)
    index = DemonstrationIndex(np.array([2, 2]))
    scores = policy_difficulty(cnn, obs, np.zeros(4, dtype=np.int64), index, min_log_prob=-50.0)
    np.testing.assert_array_equal(scores, [100.0, 100.0])


def test_bad_curriculum_arguments_name_the_problem(car_pool, bc_trainer):
    mdp, _, pool = car_pool
    demos = pool.all_trajectories()[:3]
    trainer = bc_trainer(mdp)
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator; got RandomState"):
        CurriculumBC(trainer, demos, variant="Agn", rng=np.random.RandomState(0))
    for floor in (1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="min_log_prob must be a finite number <= 0"):
            CurriculumBC(trainer, demos, variant="Agn", min_log_prob=floor)
    # a log-density may be positive: any finite value is a score, summed per demonstration
    lengths = np.array([len(d.acts) for d in demos], dtype=np.float64)
    positive = CurriculumBC(trainer, demos, variant="Cur-T", teacher=lambda obs, acts: np.full(len(acts), 0.5))
    np.testing.assert_allclose(positive.teacher_difficulty, -0.5 * lengths)
    with pytest.raises(ValueError, match=r"NaN or \+inf log-probabilities \(first: inf at transition 0\)"):
        CurriculumBC(trainer, demos, variant="Cur-T", teacher=lambda obs, acts: np.full(len(acts), np.inf))
    with pytest.raises(ValueError, match=r"NaN or \+inf log-probabilities \(first: nan at transition 0\)"):
        CurriculumBC(trainer, demos, variant="Cur-T", teacher=lambda obs, acts: np.full(len(acts), np.nan))
    with pytest.raises(ValueError, match=r"must be finite; 1 are not \(first: nan for demonstration 1\)"):
        CurriculumBC(trainer, demos, variant="Cur-T", teacher=np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match=r"must have shape \(3,\), one per demonstration; got \(5,\)"):
        CurriculumBC(trainer, demos, variant="Cur-T", teacher=np.zeros(5))


@pytest.mark.filterwarnings("error")  # overrides the module's ignore: the adapter itself must keep it quiet
def test_curriculum_bc_keeps_imitations_requires_grad_warning_to_itself(car_demos, bc_trainer):
    import warnings

    mdp, log_expert, demos = car_demos
    trainer = bc_trainer(mdp)
    curriculum = CurriculumBC(trainer, demos[:64], variant="Cur", teacher=lambda o, a: log_expert[o, a])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        curriculum.train(n_epochs=2)
    assert not [w for w in caught if "requires_grad" in str(w.message)]
