"""The policy factory and the BC trainer factory (curteach_teaching.learners.factory)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("imitation")

from stable_baselines3.common import policies  # noqa: E402

from curteach_teaching.learners import gaussian  # noqa: E402
from curteach_teaching.learners.factory import make_bc_trainer, make_policy  # noqa: E402
from curteach_teaching.learners.seeding import seeded_globals  # noqa: E402

VECTORS = gym.spaces.Box(-1.0, 1.0, (4,))
IMAGES = gym.spaces.Box(0, 255, (3, 40, 40), dtype=np.uint8)  # channel-first, as SB3's NatureCNN reads it


def test_the_class_follows_the_spaces():
    assert type(make_policy("auto", VECTORS, gym.spaces.Discrete(2), 0)) is policies.ActorCriticPolicy
    assert type(make_policy("auto", VECTORS, gym.spaces.Box(-1, 1, (2,)), 0)) is gaussian.BoundedActorCriticPolicy
    assert type(make_policy("auto", IMAGES, gym.spaces.Box(-1, 1, (2,)), 0)) is gaussian.BoundedActorCriticCnnPolicy
    assert type(make_policy("auto", IMAGES, gym.spaces.Discrete(3), 0)) is policies.ActorCriticCnnPolicy
    both = gym.spaces.Dict({"x": VECTORS, "y": gym.spaces.Box(-1, 1, (2,))})
    assert type(make_policy("auto", both, gym.spaces.Discrete(2), 0)) is policies.MultiInputActorCriticPolicy
    assert type(make_policy("auto", VECTORS, gym.spaces.MultiDiscrete([2, 3]), 0)) is policies.ActorCriticPolicy


def test_discrete_policies_are_sb3s_built_as_before():
    """The weights of a discrete policy are those of SB3's class built under the seed (as before the factory)."""
    with seeded_globals(5):
        direct = policies.ActorCriticPolicy(VECTORS, gym.spaces.Discrete(2), lambda _: 0.0)
    built = make_policy("mlp", VECTORS, gym.spaces.Discrete(2), 5)
    for (name, a), (_, b) in zip(direct.state_dict().items(), built.state_dict().items(), strict=True):
        assert th.equal(a, b), name


def test_a_kind_that_does_not_fit_is_one_line():
    with pytest.raises(ValueError, match=r"policy 'cnn' needs image observations .* Box\(-1.0, 1.0, \(4,\)"):
        make_policy("cnn", VECTORS, gym.spaces.Box(-1, 1, (2,)), 0)
    with pytest.raises(ValueError, match="policy 'multi-input' needs Dict observations"):
        make_policy("multi-input", VECTORS, gym.spaces.Discrete(2), 0)
    with pytest.raises(ValueError, match="policy 'babyai-film' needs BabyAI's encoded observations"):
        make_policy("babyai-film", VECTORS, gym.spaces.Discrete(7), 0)
    with pytest.raises(ValueError, match="policy must be one of"):
        make_policy("transformer", VECTORS, gym.spaces.Discrete(2), 0)
    for space in (gym.spaces.Tuple((gym.spaces.Discrete(2),)), gym.spaces.MultiBinary(3)):
        with pytest.raises(ValueError, match="learn Discrete, Box or MultiDiscrete actions"):
            make_policy("auto", VECTORS, space, 0)


def test_the_bc_trainer_is_built_on_the_given_device_with_the_given_optimizer():
    policy = make_policy("auto", VECTORS, gym.spaces.Box(-1, 1, (2,)), 0)
    trainer = make_bc_trainer(policy, VECTORS, gym.spaces.Box(-1, 1, (2,)), batch_size=8, learning_rate=0.5,
                              rng=np.random.default_rng(0), device="cpu", optimizer="sgd", ent_weight=0.0)
    assert trainer.policy is policy and policy.device.type == "cpu"
    assert isinstance(trainer.optimizer, th.optim.SGD) and trainer.optimizer.param_groups[0]["lr"] == 0.5
    assert trainer.loss_calculator.ent_weight == 0.0 and trainer.batch_size == 8
    with pytest.raises(ValueError, match="optimizer must be one of"):
        make_bc_trainer(policy, VECTORS, gym.spaces.Box(-1, 1, (2,)), batch_size=8, learning_rate=0.5,
                        rng=np.random.default_rng(0), optimizer="lbfgs")


@pytest.mark.slow
def test_bc_fits_a_linear_continuous_controller_and_the_log_std_stays_bounded():
    """Box actions through the factories: BC recovers a = W s from noiseless demonstrations, and its log-std, pushed
    down by the likelihood, stops at the bound."""
    from imitation.data.types import Transitions

    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (512, 4)).astype(np.float32)
    weights = np.array([[0.5, -0.3, 0.0, 0.2], [0.0, 0.4, -0.6, 0.1]], dtype=np.float32)
    acts = obs @ weights.T
    space = gym.spaces.Box(-2, 2, (2,))
    policy = make_policy("mlp", VECTORS, space, 0)
    trainer = make_bc_trainer(policy, VECTORS, space, batch_size=64, learning_rate=1e-2, rng=rng)
    demos = Transitions(obs=obs, acts=acts, infos=np.array([{}] * 512), next_obs=obs, dones=np.zeros(512, bool))
    trainer.set_demonstrations(demos)
    trainer.train(n_batches=600)
    with th.no_grad():
        mean = policy.get_distribution(th.as_tensor(obs)).distribution.mean.numpy()
    assert np.abs(mean - acts).mean() < 0.05
    assert float(policy.log_std.min()) <= -5.0 + 1e-6 or float(
        policy.get_distribution(th.as_tensor(obs[:1])).distribution.scale.min()) >= np.exp(-5.0) - 1e-7


def test_bc_adam_is_foreach_and_steps_as_torchs_default_adam_to_the_bit():
    """BC's Adam runs in its foreach form (issue 56: less CPU per step) and moves the parameters exactly as torch's
    default Adam does: the same policy, the same batches, 60 steps, every parameter equal to the bit."""
    from imitation.data.types import Transitions

    rng = np.random.default_rng(3)
    obs = rng.normal(size=(256, 4)).astype(np.float32)
    acts = rng.integers(0, 3, 256)
    demos = Transitions(obs=obs, acts=acts, infos=np.array([{}] * 256), next_obs=obs, dones=np.zeros(256, bool))
    space = gym.spaces.Discrete(3)
    final = []
    for foreach in (True, None):
        policy = make_policy("mlp", VECTORS, space, 0)
        trainer = make_bc_trainer(policy, VECTORS, space, batch_size=32, learning_rate=3e-3,
                                  rng=np.random.default_rng(0), ent_weight=1e-3)
        assert trainer.optimizer.param_groups[0]["foreach"] is True
        if foreach is None:  # torch's default on CPU tensors: the per-parameter loop
            trainer.optimizer.param_groups[0]["foreach"] = None
        trainer.set_demonstrations(demos)
        with seeded_globals(0):  # BC's data loader shuffles from torch's global generator
            trainer.train(n_batches=60)
        final.append([p.detach().clone() for p in policy.parameters()])
    assert all(th.equal(a, b) for a, b in zip(*final, strict=True))
    assert not all(th.equal(a, b) for a, b in zip(final[0], make_policy("mlp", VECTORS, space, 0).parameters(),
                                                    strict=True))
