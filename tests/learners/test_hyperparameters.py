"""The learners' hyper-parameters as options (curteach_teaching.learners.hyperparameters): defaults that are the
constructors' own, options at their default dropped, options of another policy refused in one line, the
constructor arguments they make, and each kind's default learning rate."""

from __future__ import annotations

import inspect

import gymnasium as gym
import numpy as np
import pytest

from curteach_teaching.learners.bc_rnn import ACTING, BCRNNLearner
from curteach_teaching.learners.dataset_learner import learner_kind, make_learner
from curteach_teaching.learners.diffusion import DiffusionLearner
from curteach_teaching.learners.hyperparameters import (
    HYPERPARAMETERS,
    default_learning_rate,
    learner_keywords,
    learner_options,
    options_label,
)

OBS = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)
ACTS = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


def test_the_defaults_are_the_learners_own():
    classes = {"diffusion": DiffusionLearner, "bc-rnn": BCRNNLearner}
    for option in HYPERPARAMETERS:
        default = inspect.signature(classes[option.policy]).parameters[option.keyword].default
        if option.keyword == "hidden_sizes":  # width x depth
            assert default == (256, 256, 256) and option.default in (256, 3)
        else:
            assert option.default == default, option.name
    rnn_acting = next(o for o in HYPERPARAMETERS if o.name == "rnn_acting")
    assert rnn_acting.choices == ACTING


def test_options_at_their_default_are_dropped_and_the_rest_sorted():
    given = {"rnn_window": 10, "rnn_hidden": 64, "rnn_components": 3, "rnn_acting": None, "ddim_steps": None}
    assert learner_options("bc-rnn", given) == (("rnn_components", 3), ("rnn_hidden", 64))
    assert learner_options("bc-rnn", {"rnn_window": 10}) == ()
    assert options_label(()) == "" and options_label((("rnn_hidden", 64),)) == "|rnn_hidden=64"


@pytest.mark.parametrize(("policy", "given", "message"), [
    ("diffusion", {"rnn_window": 5}, "--rnn-window applies to --policy bc-rnn only, not diffusion"),
    ("auto", {"ddim_steps": 10}, "--ddim-steps applies to --policy diffusion only, not auto"),
    ("bc-rnn", {"rnn_hidden": 0}, "--rnn-hidden must be an integer >= 1; got 0"),
    ("bc-rnn", {"rnn_acting": "open-loop"}, "--rnn-acting must be one of window, carried, horizon"),
    ("diffusion", {"ddim_steps": 20, "diffusion_timesteps": 10}, "--ddim-steps must be at most --diffusion-timesteps"),
    ("diffusion", {"ddim_steps": 101}, "--ddim-steps must be at most --diffusion-timesteps (100); got 101"),
])
def test_a_bad_option_is_one_line(policy, given, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")) as error:
        learner_options(policy, given)
    assert "\n" not in str(error.value)


def test_the_options_make_the_learner():
    assert learner_keywords(()) == {}
    assert learner_keywords((("denoiser_width", 32),)) == {"hidden_sizes": (32, 32, 32)}
    assert learner_keywords((("denoiser_depth", 2), ("diffusion_samples", 4))) == {
        "hidden_sizes": (256, 256), "score_draws": 4}
    options = learner_options("bc-rnn", {"rnn_window": 4, "rnn_hidden": 8, "rnn_layers": 1, "rnn_components": 2,
                                         "rnn_acting": "carried"})
    learner = make_learner("bc-rnn", OBS, ACTS, seed=0, device="cpu", batch_size=8, learning_rate=1e-3, rng=None,
                           options=options)
    assert (learner.window, learner.hidden_size, learner.layers, learner.modes, learner.acting) == (4, 8, 1, 2,
                                                                                                      "carried")
    assert learner.network.logits.out_features == 2


def test_each_kind_has_its_learning_rate():
    assert default_learning_rate(learner_kind("diffusion")[1]) == 3e-3
    assert default_learning_rate(learner_kind("bc-rnn")[1]) == 1e-3
    assert default_learning_rate(learner_kind("auto")[1]) == 1e-3
