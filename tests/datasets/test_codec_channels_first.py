"""Camera frames stored channels-last (robot datasets' ``(H, W, C)``) reach SB3's CNN channels-first, in the
demonstrations and in the evaluation environment alike; before, ``--policy auto`` built a Nature CNN that read them
as ``H`` channels and failed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("imitation")

from curteach_teaching.datasets.codecs import codec_for  # noqa: E402
from curteach_teaching.datasets.codecs.channels_first import ChannelsFirst  # noqa: E402

IMAGE = gym.spaces.Box(0, 255, (36, 40, 3), np.uint8)


def _trajectories(n=4, length=5, seed=0, dict_obs=False):
    from imitation.data.types import DictObs, TrajectoryWithRew

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        image = rng.integers(0, 256, size=(length + 1, *IMAGE.shape), dtype=np.uint8)
        obs = DictObs({"camera": image, "state": rng.normal(size=(length + 1, 2)).astype(np.float32)}) if dict_obs \
            else image
        out.append(TrajectoryWithRew(obs=obs, acts=rng.integers(0, 3, size=length), infos=None, terminal=True,
                                     rews=np.ones(length)))
    return out


def test_a_channels_last_image_is_turned_channels_first():
    codec = codec_for(IMAGE)
    assert codec.name == "channels-first" and codec.observation_space.shape == (3, 36, 40)
    [trajectory] = codec.trajectories(_trajectories(n=1))
    original = _trajectories(n=1)[0].obs
    assert trajectory.obs.shape == (6, 3, 36, 40)
    np.testing.assert_array_equal(trajectory.obs[2, 1], original[2, :, :, 1])  # channel 1 of step 2
    # channels-first already, vectors, small grids (BabyAI's 7 x 7 x 3 is no SB3 image): as they are
    for space in (gym.spaces.Box(0, 255, (3, 36, 40), np.uint8), gym.spaces.Box(-1, 1, (5,)),
                  gym.spaces.Box(0, 255, (7, 7, 3), np.uint8)):
        assert codec_for(space).name == "identity"


def test_each_image_of_a_dict_is_turned_and_the_rest_kept():
    space = gym.spaces.Dict({"camera": IMAGE, "state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)})
    codec = codec_for(space)
    assert codec.image_keys == ("camera",) and codec.observation_space["camera"].shape == (3, 36, 40)
    assert codec.observation_space["state"] == space["state"]
    [trajectory] = codec.trajectories(_trajectories(n=1, dict_obs=True))
    original = _trajectories(n=1, dict_obs=True)[0].obs
    np.testing.assert_array_equal(trajectory.obs.get("camera"), np.moveaxis(original.get("camera"), -1, 1))
    np.testing.assert_array_equal(trajectory.obs.get("state"), original.get("state"))


def test_the_evaluation_environment_is_observed_the_same_way():
    class Camera(gym.Env):
        observation_space = IMAGE
        action_space = gym.spaces.Discrete(3)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self.np_random.integers(0, 256, size=IMAGE.shape, dtype=np.uint8), {}

        def step(self, action):
            return self.np_random.integers(0, 256, size=IMAGE.shape, dtype=np.uint8), 0.0, True, False, {}

    codec = codec_for(IMAGE)
    env = codec.wrap_env(Camera())
    assert isinstance(env, ChannelsFirst) and env.observation_space == codec.observation_space
    obs, _ = env.reset(seed=3)
    raw, _ = Camera().reset(seed=3)
    np.testing.assert_array_equal(obs, np.moveaxis(raw, -1, 0))
    assert env.observation_space.contains(obs)


def test_dataset_bc_trains_a_cnn_on_channels_last_frames(tmp_path, monkeypatch, capsys):
    """The whole path without an environment: ``--policy auto`` picks SB3's CNN policy, which imitation's BC trains
    on the frames channels-first (what its policy received is checked)."""
    pytest.importorskip("minari")
    from stable_baselines3.common.policies import ActorCriticCnnPolicy

    from curteach_teaching.cli import main
    from curteach_teaching.datasets import EpisodePool, write_pool
    from curteach_teaching.learners import factory

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    pool = EpisodePool.from_trajectories(_trajectories(n=10, seed=1), IMAGE, gym.spaces.Discrete(3),
                                         group="toy/camera-v0")
    write_pool(pool, "toy/camera-v0")
    built = []
    make_policy = factory.make_policy

    def recording(*args, **kwargs):
        policy = make_policy(*args, **kwargs)
        built.append(policy)
        return policy

    monkeypatch.setattr(factory, "make_policy", recording)
    from stable_baselines3.common.torch_layers import NatureCNN

    seen = []
    original = NatureCNN.forward

    def forward(self, obs):
        seen.append(tuple(obs.shape[1:]))
        return original(self, obs)

    monkeypatch.setattr(NatureCNN, "forward", forward)
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", "toy/camera-v0", "--env", "none", "--curricula", "Agn", "--runs", "1",
                 "--max-batches", "2", "--eval-every", "2", "--batch-size", "4", "--backend", "serial",
                 "--no-progress", "--no-figures", "--out", str(out)]) == 0
    assert built and all(isinstance(policy, ActorCriticCnnPolicy) for policy in built)
    assert seen and set(seen) == {(3, 36, 40)}
