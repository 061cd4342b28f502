"""The training step's log-probability without a distribution object: SB3's ``evaluate_actions`` to the bit (values,
entropies and gradients), torch's argument checks still in effect, and SB3's own distribution for anything else."""


import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy

from curteach_teaching.learners import gaussian
from curteach_teaching.learners.actor_scores import actor_log_prob

OBS = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
SPACES = {
    "categorical": gym.spaces.Discrete(4),
    "gaussian": gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
    "multi-categorical": gym.spaces.MultiDiscrete([3, 2, 4]),
    "bernoulli": gym.spaces.MultiBinary(3),
}


def policy_for(kind, cls=ActorCriticPolicy, seed=0):
    with th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        policy = cls(OBS, SPACES[kind], lambda _: 0.0, net_arch=[16])
    if kind == "gaussian":  # a log std away from its initial 0, so that the std's arithmetic shows
        with th.no_grad():
            policy.log_std.copy_(th.tensor([-0.7, 0.3, 6.0]))  # 6.0: past the bounded policy's bound of 2
    return policy


def batch(kind, n=64, seed=1):
    rng = np.random.default_rng(seed)
    obs = th.as_tensor(rng.normal(size=(n, 5)).astype(np.float32))
    if kind == "categorical":
        acts = th.as_tensor(rng.integers(0, 4, n))
    elif kind == "gaussian":
        acts = th.as_tensor(rng.normal(size=(n, 3)).astype(np.float32))
    elif kind == "multi-categorical":
        acts = th.as_tensor(np.stack([rng.integers(0, k, n) for k in (3, 2, 4)], axis=1))
    else:
        acts = th.as_tensor(rng.integers(0, 2, (n, 3)).astype(np.float32))
    return obs, acts


def gradients(policy, loss):
    policy.zero_grad(set_to_none=True)
    loss.backward()
    return {name: (p.grad.clone() if p.grad is not None else None) for name, p in policy.named_parameters()}


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and bool((a.view(-1).numpy().view(np.uint8)
                                                               == b.view(-1).numpy().view(np.uint8)).all())


@pytest.mark.parametrize("validate", [True, False], ids=["checks", "no-checks"])
@pytest.mark.parametrize("cls", [ActorCriticPolicy, gaussian.BoundedActorCriticPolicy], ids=["sb3", "bounded"])
@pytest.mark.parametrize("kind", list(SPACES))
def test_the_same_bits_as_evaluate_actions(kind, cls, validate, distribution_checks):
    """Log-probabilities, entropies and the gradients of a loss of both, byte for byte, against SB3's own
    ``evaluate_actions`` (a distribution object), for every distribution of the seam."""
    obs, acts = batch(kind)
    ours, theirs = policy_for(kind, cls), policy_for(kind, cls)
    asked = []
    build = ours.action_dist.proba_distribution
    ours.action_dist.proba_distribution = lambda *a, **k: asked.append(a) or build(*a, **k)
    with distribution_checks(validate):
        log_prob, entropy = actor_log_prob(ours, obs, acts)
        _, their_log_prob, their_entropy = theirs.evaluate_actions(obs, acts)
    assert not asked  # no distribution object
    assert same_bits(log_prob.detach(), their_log_prob.detach())
    assert same_bits(entropy.detach(), their_entropy.detach())
    ours_grad = gradients(ours, -log_prob.mean() - 0.01 * entropy.mean())
    theirs_grad = gradients(theirs, -their_log_prob.mean() - 0.01 * their_entropy.mean())
    for name, grad in theirs_grad.items():
        if grad is None:  # the critic: evaluate_actions computes it, nothing backpropagates through it
            assert ours_grad[name] is None, name
        else:
            assert same_bits(ours_grad[name], grad), name
    with distribution_checks(validate):
        log_prob, entropy = actor_log_prob(ours, obs, acts, entropy=False)  # a shorter path for some kinds
        _, their_log_prob, _ = theirs.evaluate_actions(obs, acts)
    assert entropy is None and same_bits(log_prob.detach(), their_log_prob.detach())
    ours_grad = gradients(ours, -log_prob.mean())
    theirs_grad = gradients(theirs, -their_log_prob.mean())
    assert all(same_bits(ours_grad[n], g) for n, g in theirs_grad.items() if g is not None)


def test_the_checks_raise_torchs_error(distribution_checks):
    """With torch's checks on, a batch that fails them raises torch's own error (a NaN parameter, an action outside
    the logits, a Bernoulli action that is not 0 or 1), as SB3's distribution does."""
    obs, acts = batch("categorical")
    policy = policy_for("categorical")
    with distribution_checks(True):
        with pytest.raises(ValueError, match="Expected value argument"):
            actor_log_prob(policy, obs, th.where(acts == 0, 4, acts))
        with pytest.raises(ValueError, match="Expected value argument"):
            actor_log_prob(policy, obs, th.where(acts == 0, -1, acts))
        with th.no_grad():
            policy.action_net.bias[1] = float("nan")
        with pytest.raises(ValueError, match="Expected parameter logits"):
            actor_log_prob(policy, obs, acts)
        obs, acts = batch("bernoulli")
        with pytest.raises(ValueError, match="Expected value argument"):
            actor_log_prob(policy_for("bernoulli"), obs, acts * 2)
        obs, acts = batch("gaussian")
        with pytest.raises(ValueError, match="Expected value argument"):
            actor_log_prob(policy_for("gaussian"), obs, th.where(acts > 1, float("nan"), acts))
    with distribution_checks(False):  # without the checks a NaN parameter is a NaN log-probability, as torch's
        obs, acts = batch("categorical")
        with th.no_grad():
            policy.action_net.bias[1] = float("nan")
        assert bool(th.isnan(actor_log_prob(policy, obs, acts)[0]).all())


def test_a_non_finite_batch_that_passes_the_checks_gets_the_same_numbers(distribution_checks):
    """A log-probability of -inf (a logit of -inf) fails no check of torch's but is not finite: SB3's distribution
    scores the batch again, the same numbers."""
    obs, acts = batch("categorical")
    ours, theirs = policy_for("categorical"), policy_for("categorical")
    for policy in (ours, theirs):
        with th.no_grad():
            policy.action_net.bias[0] = -float("inf")
    with distribution_checks(True):
        log_prob, entropy = actor_log_prob(ours, obs, acts)
        _, their_log_prob, their_entropy = theirs.evaluate_actions(obs, acts)
    assert bool(th.isinf(log_prob).any())
    assert same_bits(log_prob.detach(), their_log_prob.detach())
    assert same_bits(entropy.detach(), their_entropy.detach())


def test_other_policies_and_actions_go_through_their_distribution(distribution_checks):
    """A policy that builds its own distribution, and actions of another dtype or shape than the
    distribution scores, are scored by the policy's own distribution: the same numbers as ``evaluate_actions``, and
    its errors."""
    class OwnHead(ActorCriticPolicy):
        def _get_action_dist_from_latent(self, latent_pi):
            distribution = super()._get_action_dist_from_latent(latent_pi)
            self.asked += 1
            return distribution

    obs, acts = batch("categorical")
    own = policy_for("categorical", OwnHead)
    own.asked = 0
    log_prob, entropy = actor_log_prob(own, obs, acts)
    assert own.asked == 1
    _, their_log_prob, their_entropy = own.evaluate_actions(obs, acts)
    assert same_bits(log_prob.detach(), their_log_prob.detach()) and same_bits(entropy.detach(), their_entropy.detach())
    policy = policy_for("categorical")
    float_acts = acts.float()  # torch's Categorical scores whole floats as their integers
    with distribution_checks(True):
        assert same_bits(actor_log_prob(policy, obs, float_acts)[0].detach(),
                         policy.evaluate_actions(obs, float_acts)[1].detach())
        with pytest.raises(ValueError):
            actor_log_prob(policy, obs, acts[:, None].expand(-1, 2))


def test_a_batch_scored_again_runs_the_network_once(distribution_checks):
    """Scoring a batch again through SB3's distribution reuses the outputs: the network runs once (a layer that
    draws, such as dropout, draws once, as on SB3's own path)."""
    obs, acts = batch("gaussian")
    policy = policy_for("gaussian")
    calls = []
    policy.action_net.register_forward_hook(lambda *_: calls.append(1))
    with distribution_checks(True):
        log_prob, _ = actor_log_prob(policy, obs, th.where(acts > 1, float("inf"), acts))
    assert len(calls) == 1 and bool(th.isinf(log_prob).any())


def test_the_logits_policies_score_without_a_distribution():
    """The navigation CNN (a logits policy): evaluate_actions's numbers to the bit, the entropy only when asked,
    and on the CPU its own error for an action outside the logits (gather refuses it first)."""
    from curteach_teaching.learners.networks import NavigationCNNPolicy

    rng = np.random.default_rng(0)
    obs = th.as_tensor((rng.random((6, 7, 6, 6)) < 0.3).astype(np.float32))
    acts = th.tensor([0, 1, 2, 2, 1, 0])
    ours, theirs = (NavigationCNNPolicy.for_navigation(seed=3) for _ in range(2))
    for policy in (ours, theirs):
        policy.set_training_mode(False)  # no dropout: the two policies' generators draw alike anyway
    log_prob, entropy = actor_log_prob(ours, obs, acts)
    _, their_log_prob, their_entropy = theirs.evaluate_actions(obs, acts)
    assert same_bits(log_prob.detach(), their_log_prob.detach())
    assert same_bits(entropy.detach(), their_entropy.detach())
    log_prob, entropy = actor_log_prob(ours, obs, acts, entropy=False)
    _, their_log_prob, _ = theirs.evaluate_actions(obs, acts)
    assert entropy is None and same_bits(log_prob.detach(), their_log_prob.detach())
    ours_grad = gradients(ours, -log_prob.mean())
    theirs_grad = gradients(theirs, -their_log_prob.mean())
    assert all(same_bits(ours_grad[n], g) for n, g in theirs_grad.items() if g is not None)
    for bad in (3, -1):
        with pytest.raises(ValueError, match=r"actions must lie in \[0, 2\]"):
            actor_log_prob(ours, obs, th.where(acts == 0, bad, acts))
