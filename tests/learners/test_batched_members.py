"""The ensemble's members trained as one batched model (curteach_teaching.learners.batched_members)."""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("imitation")

from imitation.data import types  # noqa: E402

from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher, _held_out_difficulty  # noqa: E402
from curteach_teaching.learners import batched_members as bm  # noqa: E402
from curteach_teaching.learners.actions import log_prob_and_entropy  # noqa: E402
from curteach_teaching.learners.dataset_learner import LearnerFactory  # noqa: E402
from curteach_teaching.learners.factory import make_policy  # noqa: E402

VECTORS = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
IMAGES = gym.spaces.Box(0, 255, (3, 36, 36), dtype=np.uint8)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def pool(obs_space, act_space, n: int = 6, seed: int = 0) -> list:
    """``n`` random demonstrations of 7 to 14 steps in these spaces."""
    rng = np.random.default_rng(seed)
    demos = []
    for _ in range(n):
        steps = int(rng.integers(7, 15))
        if obs_space is IMAGES:
            obs = rng.integers(0, 256, (steps + 1, *IMAGES.shape), dtype=np.uint8)
        else:
            obs = rng.normal(size=(steps + 1, 5)).astype(np.float32)
        if isinstance(act_space, gym.spaces.Discrete):
            acts = rng.integers(0, act_space.n, steps)
        elif isinstance(act_space, gym.spaces.MultiDiscrete):
            acts = np.stack([rng.integers(0, m, steps) for m in act_space.nvec], axis=1)
        else:
            acts = np.clip(rng.normal(scale=0.5, size=(steps, 2)), -1, 1).astype(np.float32)
        demos.append(types.Trajectory(obs=obs, acts=acts, infos=None, terminal=True))
    return demos


def test_one_adam_over_stacked_parameters_is_k_separate_adams():
    rng = np.random.default_rng(0)
    K, steps = 3, 25
    start = th.tensor(rng.normal(size=(K, 4, 3)), dtype=th.float32)
    targets = th.tensor(rng.normal(size=(K, 8, 4)), dtype=th.float32)
    inputs = th.tensor(rng.normal(size=(K, 8, 3)), dtype=th.float32)

    def loss(w, k):  # a member's own least-squares problem
        return ((inputs[k] @ w.T - targets[k]) ** 2).mean()

    stacked = start.clone().requires_grad_(True)
    one = th.optim.Adam([stacked], lr=0.05, fused=True)  # as the fit steps it
    separate = [start[k].clone().requires_grad_(True) for k in range(K)]
    adams = [th.optim.Adam([w], lr=0.05) for w in separate]
    for _ in range(steps):
        sum(loss(stacked[k], k) for k in range(K)).backward()
        one.step()
        one.zero_grad()
        for k in range(K):
            loss(separate[k], k).backward()
            adams[k].step()
            adams[k].zero_grad()
    for k in range(K):
        np.testing.assert_allclose(stacked[k].detach().numpy(), separate[k].detach().numpy(), rtol=1e-6, atol=1e-7)
    assert not th.allclose(stacked.detach(), start)  # they moved


def sequential_copy(demos, in_bag, k, spaces, *, seed, batches, batch_size, lr, kind="auto"):
    """Member ``k`` trained alone in a bare loop on the batches :func:`bm.plan_batches` gives it: SB3's own
    distribution (``log_prob_and_entropy``), BC's loss at ``ent_weight`` 1e-3, Adam; its losses and policy."""
    from imitation.data import rollout

    net_seed, batch_seed = bm.member_seeds(seed, k)
    policy = make_policy(kind, *spaces, net_seed)
    flat = rollout.flatten_trajectories(demos)
    lengths = np.array([len(d.acts) for d in demos])
    half = np.flatnonzero(np.repeat(in_bag[k], lengths))
    plan = bm.plan_batches(half, batches, batch_size, np.random.default_rng(batch_seed))
    adam = th.optim.Adam(policy.parameters(), lr=lr)
    losses = []
    for rows in plan:
        obs, _ = policy.obs_to_tensor(flat.obs[rows])
        log_prob, entropy = log_prob_and_entropy(policy, obs, th.as_tensor(flat.acts[rows]))
        loss = -log_prob.mean() + -1e-3 * entropy.mean()
        loss.backward()
        adam.step()
        adam.zero_grad()
        losses.append(float(loss.detach()))
    return np.array(losses), policy


@pytest.mark.parametrize("obs_space, act_space", [
    (VECTORS, BOX), (VECTORS, gym.spaces.Discrete(3)), (VECTORS, gym.spaces.MultiDiscrete([2, 3])),
    (IMAGES, gym.spaces.Discrete(3)),
], ids=["mlp-gaussian", "mlp-categorical", "mlp-multi-categorical", "cnn-categorical"])
def test_a_batched_member_is_the_sequentially_trained_policy(obs_space, act_space):
    demos = pool(obs_space, act_space)
    spaces = (obs_space, act_space)
    in_bag = EnsembleTeacher(size=3).halves(len(demos))
    batches = 12 if obs_space is IMAGES else 40
    members, losses = bm.fit_members(demos, in_bag, lambda s: make_policy("auto", *spaces, s), seed=3,
                                     batches=batches, batch_size=16, learning_rate=3e-3)
    assert losses.shape == (batches, 3)
    for k in range(3):
        expected, policy = sequential_copy(demos, in_bag, k, spaces, seed=3, batches=batches, batch_size=16, lr=3e-3)
        np.testing.assert_allclose(losses[:, k], expected, rtol=1e-4, atol=1e-5)
        own = dict(policy.named_parameters())
        # a convolution's batched kernels sum in another order: one weight of 32,768 drifted 1.7e-5 in 12 steps
        atol = 1e-4 if obs_space is IMAGES else 1e-5
        for name, value in members.member_state(k).items():
            np.testing.assert_allclose(value.numpy(), own[name].detach().numpy(), rtol=1e-4, atol=atol)
    assert not np.allclose(losses[0], losses[-1])  # it trained


def test_the_batched_member_is_the_ensembles_curriculum_bc_member():
    """The same seeds, batches, loss and Adam as ``EnsembleTeacher.fit_member`` (``CurriculumBC``): the parameters
    agree to float rounding after training."""
    demos = pool(VECTORS, BOX, n=5, seed=2)
    teacher = EnsembleTeacher(size=2, batches=30, batch_size=8, seed=4)
    in_bag = teacher.halves(len(demos))
    members, _ = bm.fit_members(demos, in_bag, lambda s: make_policy("auto", VECTORS, BOX, s), seed=4, batches=30,
                                batch_size=8, learning_rate=1e-3)
    for k in range(2):
        policy = teacher.fit_member(k, demos, in_bag[k], LearnerFactory("auto", VECTORS, BOX)).policy
        own = dict(policy.named_parameters())
        for name, value in members.member_state(k).items():
            np.testing.assert_allclose(value.numpy(), own[name].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_seeds_are_the_ensembles():
    for k in range(3):
        children = np.random.SeedSequence([7, k, 1]).spawn(2)
        assert bm.member_seeds(7, k) == tuple(int(c.generate_state(1)[0]) for c in children)


def test_the_fit_is_deterministic_and_leaves_global_generators_alone():
    demos = pool(VECTORS, BOX)
    in_bag = EnsembleTeacher(size=3).halves(len(demos))

    def run():
        return bm.batched_log_likelihoods(demos, in_bag, lambda s: make_policy("auto", VECTORS, BOX, s), seed=1,
                                          batches=20, batch_size=16, learning_rate=1e-3)

    np_state, torch_state = np.random.get_state()[1].copy(), th.get_rng_state()
    first = run()
    assert np.array_equal(np.random.get_state()[1], np_state) and th.equal(th.get_rng_state(), torch_state)
    assert first.shape == (3, len(demos)) and np.isfinite(first).all()
    np.testing.assert_array_equal(first, run())
    other = bm.batched_log_likelihoods(demos, in_bag, lambda s: make_policy("auto", VECTORS, BOX, s), seed=2,
                                       batches=20, batch_size=16, learning_rate=1e-3)
    assert not np.array_equal(first, other)


def test_the_scores_are_the_sequential_scores_of_the_trained_members():
    """:func:`bm.member_log_likelihoods` of each member = the ensemble's scoring of that member as a policy."""
    from imitation.data import rollout

    from curteach_teaching.curriculum.index import DemonstrationIndex
    from curteach_teaching.curriculum.scores import policy_difficulty

    demos = pool(VECTORS, gym.spaces.Discrete(3))
    spaces = (VECTORS, gym.spaces.Discrete(3))
    in_bag = EnsembleTeacher(size=2).halves(len(demos))
    members, _ = bm.fit_members(demos, in_bag, lambda s: make_policy("auto", *spaces, s), seed=0, batches=15,
                                batch_size=16, learning_rate=1e-3)
    batched = bm.member_log_likelihoods(members, demos, chunk_size=7)  # chunks that cut demonstrations
    index = DemonstrationIndex.from_trajectories(demos)
    flat = rollout.flatten_trajectories(demos)
    for k in range(2):
        policy = members.load_member(k, make_policy("auto", *spaces, 0))
        expected = -policy_difficulty(policy, flat.obs, flat.acts, index) / index.lengths
        np.testing.assert_allclose(batched[k], expected, rtol=1e-5, atol=1e-6)


def test_a_diverged_member_is_named_and_spoils_no_other():
    demos = pool(VECTORS, BOX)
    in_bag = EnsembleTeacher(size=3).halves(len(demos))
    broken = bm.member_seeds(0, 1)[0]

    def make(seed):  # member 1 starts with a NaN weight, as a diverged fit ends
        policy = make_policy("auto", VECTORS, BOX, seed)
        if seed == broken:
            with th.no_grad():
                policy.action_net.bias[0] = float("nan")
        return policy

    members, _ = bm.fit_members(demos, in_bag, make, seed=0, batches=5, batch_size=16, learning_rate=1e-3)
    assert all(th.isfinite(value).all() for value in members.member_state(0).values())
    assert all(th.isfinite(value).all() for value in members.member_state(2).values())
    with pytest.raises(ValueError, match="ensemble member 1 gave log-likelihoods that are not finite"):
        bm.member_log_likelihoods(members, demos)


def test_what_is_not_batched_says_why():
    assert bm.batch_reason(make_policy("auto", VECTORS, BOX, 0)) is None
    assert bm.batch_reason(make_policy("cnn", IMAGES, gym.spaces.Discrete(3), 0)) is None
    both = gym.spaces.Dict({"x": VECTORS, "y": gym.spaces.Box(-1, 1, (2,))})
    assert "Dict" in bm.batch_reason(make_policy("auto", both, gym.spaces.Discrete(2), 0))
    assert "not an SB3 ActorCriticPolicy" in bm.batch_reason(th.nn.Linear(2, 2))
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    assert "logits policy" in bm.batch_reason(BabyAIFiLMPolicy.for_babyai(seed=0))
    with pytest.raises(ValueError, match="cannot be batched: .*Dict"):
        bm.BatchedMembers([make_policy("auto", both, gym.spaces.Discrete(2), 0)])


def pendulum(n: int, horizon: int, seed: int = 1000, noise: float = 1.5) -> tuple[list, np.ndarray]:
    """``n`` Pendulum episodes of the scripted controller of ``examples/datasets/scripted_pendulum.py`` (its reset
    seeds and noise), every third noisy; the demonstrations and the noisy mask."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "datasets"))
    try:
        from scripted_pendulum import controller
    finally:
        sys.path.pop(0)
    env = gym.make("Pendulum-v1", max_episode_steps=horizon)
    demos, noisy = [], np.arange(n) % 3 == 0
    for i in range(n):
        rng = np.random.default_rng(seed + i)
        obs, _ = env.reset(seed=seed + i)
        observations, actions = [obs], []
        for _ in range(horizon):
            action = controller(obs)
            if noisy[i]:
                action = np.clip(action + rng.normal(0.0, noise, 1).astype(np.float32), -2.0, 2.0)
            obs, *_ = env.step(action)
            observations.append(obs)
            actions.append(action)
        demos.append(types.Trajectory(obs=np.array(observations), acts=np.array(actions), infos=None, terminal=False))
    return demos, noisy


def agreement(n: int, horizon: int, batches: int) -> None:
    """The batched fit's held-out difficulty against ``EnsembleTeacher.scores``: a Spearman correlation >= 0.95 and
    the same count of noisy episodes among the dropped (within one) at keep 0.6."""
    from scipy.stats import spearmanr

    demos, noisy = pendulum(n, horizon)
    env = gym.make("Pendulum-v1")
    spaces = (env.observation_space, env.action_space)
    teacher = EnsembleTeacher(batches=batches)
    in_bag = teacher.halves(n)
    log_likelihood = bm.batched_log_likelihoods(demos, in_bag, lambda s: make_policy("auto", *spaces, s),
                                                seed=teacher.seed, batches=batches, batch_size=teacher.batch_size,
                                                learning_rate=teacher.learning_rate)
    batched = _held_out_difficulty(log_likelihood, in_bag)
    sequential = teacher.scores(demos, LearnerFactory("auto", *spaces)).difficulty
    assert spearmanr(batched, sequential).statistic >= 0.95
    keep = round(0.6 * n)
    dropped = [int(noisy[np.argsort(scores, kind="stable")[keep:]].sum()) for scores in (batched, sequential)]
    assert abs(dropped[0] - dropped[1]) <= 1
    assert dropped[1] >= 0.6 * noisy.sum()  # the check means something: the ensemble finds most noisy episodes


def test_the_batched_fit_selects_what_the_sequential_fit_selects():
    agreement(n=24, horizon=100, batches=200)


@pytest.mark.slow
def test_the_batched_fit_selects_what_the_sequential_fit_selects_on_the_pendulum_example():
    agreement(n=40, horizon=200, batches=500)  # rank's defaults on the 40-episode example
