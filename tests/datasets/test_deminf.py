"""DemInf's per-demonstration score (datasets.deminf): demonstrations whose actions follow from their states rank
before those with random actions, for both encoders; a seed gives one answer; torch's global generator is untouched."""

import inspect

import numpy as np
import pytest

from curteach_teaching.datasets.deminf import DEFAULT_SETTINGS, deminf_scores


def auroc(score: np.ndarray, label: np.ndarray) -> float:
    """The probability that a labelled episode scores above an unlabelled one, ties counting a half."""
    positive, negative = score[label], score[~label]
    above = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    return float(above / (positive.size * negative.size))


def test_the_auroc_helper_on_a_hand_example():
    # Pairs (labelled, unlabelled): (3 vs 1) above, (3 vs 2) above, (2 vs 1) above, (2 vs 2) a tie: 3.5 of 4.
    assert auroc(np.array([3.0, 2.0, 1.0, 2.0]), np.array([True, True, False, False])) == 0.875


def synthetic_pool(episodes: int = 20, steps: int = 40, seed: int = 5):
    """Half the episodes act by one fixed function of the state, half at random; ``(obs, acts, episode_of_step,
    random_actions)``."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(6, 2))
    obs = rng.normal(size=(episodes * steps, 6))
    acts = np.tanh(obs @ weights)
    random_actions = np.arange(episodes) % 2 == 1
    episode_of_step = np.repeat(np.arange(episodes), steps)
    noisy_steps = random_actions[episode_of_step]
    acts[noisy_steps] = rng.uniform(-1.0, 1.0, size=(int(noisy_steps.sum()), 2))
    return obs, acts, episode_of_step, random_actions


@pytest.mark.parametrize("settings", [dict(encoder="pca"), dict(encoder="pca", batch=200),
                                      pytest.param(dict(encoder="vae", vae_steps=300), marks=pytest.mark.slow)])
def test_random_actions_score_worse(settings):
    obs, acts, episode_of_step, random_actions = synthetic_pool()
    scores = deminf_scores(obs, acts, episode_of_step, k=5, seed=0, **settings)
    assert scores.shape == (20,) and scores.dtype == np.float64
    assert auroc(scores, random_actions) > 0.9  # larger = dropped first: the random episodes


def test_one_seed_one_answer_and_the_global_generator_untouched():
    import torch as th

    obs, acts, episode_of_step, _ = synthetic_pool(episodes=8, steps=30)
    before = th.get_rng_state()
    first = deminf_scores(obs, acts, episode_of_step, encoder="vae", vae_steps=20, seed=3)
    assert th.equal(th.get_rng_state(), before)
    np.testing.assert_array_equal(first, deminf_scores(obs, acts, episode_of_step, encoder="vae", vae_steps=20, seed=3))
    assert not np.array_equal(first, deminf_scores(obs, acts, episode_of_step, encoder="vae", vae_steps=20, seed=4))
    batched = [deminf_scores(obs, acts, episode_of_step, batch=100, seed=3) for _ in range(2)]
    np.testing.assert_array_equal(*batched)


@pytest.mark.parametrize(("episodes", "encoder", "message"), [
    (np.array([0, 0, 2, 2]), "pca", "episode 1 has no step"),
    (np.array([0, 0, 1]), "pca", "one row per step"),
    (np.array([0, 0, 1, 1]), "umap", "unknown DemInf encoder"),
])
def test_bad_input_is_refused(episodes, encoder, message):
    obs = np.arange(8.0).reshape(4, 2) ** 2
    with pytest.raises(ValueError, match=message):
        deminf_scores(obs, np.sqrt(obs), episodes, k=1, encoder=encoder)


def test_a_batch_too_small_for_k_is_refused():
    obs, acts, episode_of_step, _ = synthetic_pool(episodes=4, steps=10)
    with pytest.raises(ValueError, match="batch must be"):
        deminf_scores(obs, acts, episode_of_step, k=5, batch=10)


def test_the_default_settings_are_the_signatures_defaults():
    defaults = {name: parameter.default for name, parameter in inspect.signature(deminf_scores).parameters.items()
                if parameter.default is not inspect.Parameter.empty and name not in ("seed", "device")}
    assert defaults == DEFAULT_SETTINGS
