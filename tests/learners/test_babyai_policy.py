"""The BabyAI FiLM policy and its mission vocabulary: tokens, shapes, seeded weights, one BC step, save/load."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th

pytest.importorskip("minigrid")

from curteach_teaching.datasets.sources.babyai_bot import (  # noqa: E402
    make_level,
    make_policy_env,
    plan_episodes,
    run_bot_episode,
)
from curteach_teaching.learners.babyai import BabyAIFiLMPolicy  # noqa: E402
from curteach_teaching.learners.babyai_vocab import (  # noqa: E402
    BABYAI_WORDS,
    PAD_ID,
    UNK_ID,
    VOCABULARY,
    encode_missions,
    encode_observations,
    policy_observation_space,
    tokenize,
)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Batches of a few 7x7 views: more threads only wait on each other (and on other tests' processes)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_vocabulary_is_minigrids_grammar():
    from minigrid.core.constants import COLOR_NAMES
    from minigrid.envs.babyai.core.verifier import LOC_NAMES, OBJ_TYPES

    assert set(COLOR_NAMES) | set(OBJ_TYPES) | set(LOC_NAMES) <= set(BABYAI_WORDS)
    assert list(BABYAI_WORDS) == sorted(set(BABYAI_WORDS)) and VOCABULARY[:2] == ("<pad>", "<unk>")
    for level in ("BabyAI-PutNextLocal-v0", "BabyAI-PickupLoc-v0", "BabyAI-Synth-v0"):
        env = make_policy_env(level).env  # missions as strings
        for seed in range(5):
            mission = env.reset(seed=seed)[0]["mission"]
            assert UNK_ID not in tokenize(mission), mission


def test_tokenize_pads_truncates_and_maps_unknown_words():
    assert tokenize("Go to the red ball, then pick up a key") == [
        VOCABULARY.index(w) for w in ("go", "to", "the", "red", "ball", "then", "pick", "up", "a", "key")]
    assert tokenize("go to the teapot")[-1] == UNK_ID
    encoded = encode_missions(["go to the red ball", "open the door", "go to the red ball"], max_tokens=4)
    assert encoded.shape == (3, 4) and encoded.dtype == np.int64
    assert encoded[1, 3] == PAD_ID and np.array_equal(encoded[0], encoded[2])
    with pytest.raises(ValueError, match="sequence of missions"):
        encode_missions("go to the red ball")


def test_the_mission_encoding_ignores_padding_and_the_logits_have_shape_b_by_7():
    policy = BabyAIFiLMPolicy.for_babyai(seed=0)
    env = make_policy_env("BabyAI-GoToLocal-v0")
    observations = [env.reset(seed=seed)[0] for seed in range(3)]
    batch = {key: np.stack([o[key] for o in observations]) for key in observations[0]}
    logits = policy.action_logits(batch)
    assert logits.shape == (3, 7)
    wider = dict(batch, mission=np.pad(batch["mission"], ((0, 0), (0, 10))))
    assert th.allclose(policy.action_logits(wider), logits, atol=1e-6)
    action, _ = policy.predict(observations[0], deterministic=True)
    assert action.shape == () and int(action) == int(logits[0].argmax())


def test_weights_come_from_the_seed_and_never_from_the_global_rng():
    state = th.get_rng_state()
    first, again, other = (BabyAIFiLMPolicy.for_babyai(seed=s) for s in (3, 3, 4))
    assert th.equal(th.get_rng_state(), state)
    for a, b in zip(first.state_dict().values(), again.state_dict().values()):
        assert th.equal(a, b)
    assert not all(th.equal(a, c) for a, c in zip(first.state_dict().values(), other.state_dict().values()))
    assert 200_000 < sum(p.numel() for p in first.parameters()) < 300_000


def test_bad_spaces_are_refused():
    with pytest.raises(ValueError, match="observation_space"):
        BabyAIFiLMPolicy(gym.spaces.Box(0, 1, (3,)), gym.spaces.Discrete(7))
    with pytest.raises(ValueError, match="Discrete\\(7\\)"):
        BabyAIFiLMPolicy(policy_observation_space(), gym.spaces.Discrete(3))


def test_imitations_bc_trains_it_one_step(tmp_path):
    from imitation.algorithms import bc
    from imitation.data import rollout
    from imitation.data.types import DictObs, Trajectory

    trajectories = []
    for plan in plan_episodes("GoToLocal", 3, seed=0):
        episode = run_bot_episode(plan)
        observations = encode_observations({"image": episode.images, "direction": episode.directions,
                                            "mission": [episode.mission] * (episode.length + 1)})
        trajectories.append(Trajectory(obs=DictObs(observations), acts=episode.actions, infos=None, terminal=True))
    policy = BabyAIFiLMPolicy.for_babyai(seed=0)
    before = [p.detach().clone() for p in policy.parameters()]
    trainer = bc.BC(observation_space=policy.observation_space, action_space=policy.action_space,
                    rng=np.random.default_rng(0), policy=policy, batch_size=4,
                    demonstrations=rollout.flatten_trajectories(trajectories))
    with pytest.warns(UserWarning):  # imitation 1.0.1 warns on its own dict batches and a scalar conversion
        trainer.train(n_batches=1, progress_bar=False)
    assert any(not th.equal(a, b) for a, b in zip(before, policy.parameters()))
    # SB3 2.2's policy.load calls th.load without weights_only, which torch >= 2.6 refuses; a checkpoint is the
    # constructor parameters plus the state dict
    th.save(policy.state_dict(), tmp_path / "policy.pt")
    loaded = BabyAIFiLMPolicy(**policy._get_constructor_parameters())
    loaded.load_state_dict(th.load(tmp_path / "policy.pt", weights_only=True))
    observation = make_policy_env("BabyAI-GoToLocal-v0").reset(seed=1)[0]
    assert th.equal(loaded.action_logits(observation), policy.action_logits(observation))
    assert make_level("BabyAI-GoToLocal-v0").action_space == policy.action_space
