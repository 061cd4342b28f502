"""The built-in dataset learners' hyper-parameters as options of the commands: ``--diffusion-timesteps``,
``--rnn-window``, ... and each learner kind's own default learning rate.

Each :class:`Hyperparameter` belongs to one ``--policy`` (``diffusion`` or ``bc-rnn``) and has a default equal to the
learner's own (``tests/learners/test_hyperparameters.py`` reads them off the constructors), so a learner built
without options is the learner as it was. The commands hand the options given as ``name -> value``
(:func:`learner_options`): an option for another policy is refused in one line, and an option at its default is
dropped, so that what is kept, :data:`LearnerOptions` (sorted ``(name, value)`` pairs, empty by default), names
exactly the learners that differ from the default one (a sweep's fingerprint and a cache key hold it only when
non-empty). :func:`learner_keywords` turns them into the learner's constructor arguments.

The learning rate: a learner kind may declare ``default_learning_rate`` (the diffusion learner's is 3e-3, the pilot
of ``docs/learners-diffusion.md``); :func:`default_learning_rate` is it, else dataset-bc's 1e-3, what a command uses
where ``--learning-rate`` is not given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_LEARNING_RATE", "HYPERPARAMETERS", "Hyperparameter", "LearnerOptions", "default_learning_rate",
           "learner_keywords", "learner_options", "options_label"]

#: the learning rate of a learner kind that declares none (dataset-bc's and rank's since their first sweeps)
DEFAULT_LEARNING_RATE = 1e-3

#: sorted ``(name, value)`` pairs of the options away from their defaults (``()``: the default learner)
LearnerOptions = tuple


@dataclass(frozen=True)
class Hyperparameter:
    """One option of one learner kind.

    Attributes:
        name: the setting's name (the flag is ``--`` + ``name`` with ``-`` for ``_``).
        policy: the ``--policy`` it applies to.
        keyword: the learner's constructor argument it sets (``hidden_sizes`` is built of width and depth).
        default: the learner's own default; choices: the allowed values of a string option (``None``: an integer
            >= 1).
        help: the flag's help, without the default.
    """

    name: str
    policy: str
    keyword: str
    default: Any
    help: str
    choices: tuple | None = None

    @property
    def flag(self) -> str:
        """The command-line flag, ``--rnn-window`` for ``rnn_window``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """``value`` if allowed, else a one-line ``ValueError`` naming the flag."""
        if self.choices is not None:
            if value not in self.choices:
                raise ValueError(f"{self.flag} must be one of {', '.join(self.choices)}; got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{self.flag} must be an integer >= 1; got {value!r}")
        return value


HYPERPARAMETERS = (
    Hyperparameter("diffusion_timesteps", "diffusion", "train_timesteps", 100,
                   "diffusion: T, the DDPM's noise levels"),
    Hyperparameter("ddim_steps", "diffusion", "ddim_steps", 10,
                   "diffusion: the DDIM steps of an action when acting, at most --diffusion-timesteps"),
    Hyperparameter("diffusion_samples", "diffusion", "score_draws", 8,
                   "diffusion: K, the (timestep, noise) pairs a step's score averages"),
    Hyperparameter("denoiser_width", "diffusion", "hidden_sizes", 256, "diffusion: the denoiser's hidden width"),
    Hyperparameter("denoiser_depth", "diffusion", "hidden_sizes", 3,
                   "diffusion: the denoiser's hidden layers"),
    Hyperparameter("rnn_window", "bc-rnn", "window", 10,
                   "bc-rnn: W, the steps of a window it trains and scores on"),
    Hyperparameter("rnn_hidden", "bc-rnn", "hidden_size", 400, "bc-rnn: the LSTM's units"),
    Hyperparameter("rnn_layers", "bc-rnn", "layers", 2, "bc-rnn: the LSTM's layers"),
    Hyperparameter("rnn_components", "bc-rnn", "modes", 5, "bc-rnn: the Gaussian mixture's components"),
    Hyperparameter("rnn_acting", "bc-rnn", "acting", "horizon",
                   "bc-rnn: how it acts in an environment: window (the LSTM over the episode's last W observations "
                   "from a zero state at every step, as it trains), carried (its state carried through the episode) "
                   "or horizon (carried, reset every W steps, as robomimic)", ("window", "carried", "horizon")),
    Hyperparameter("rnn_loss", "bc-rnn", "loss", "sequence",
                   "bc-rnn: what a training window's loss is on: sequence (the action of every step of the window, "
                   "as robomimic) or last (the window's last step's only)", ("sequence", "last")),
)
_BY_NAME = {h.name: h for h in HYPERPARAMETERS}


def learner_options(policy: str, given: Mapping[str, Any]) -> LearnerOptions:
    """The options of ``given`` (``name -> value``; ``None``: not given) for ``policy``, checked, those at their
    default dropped.

    Raises:
        ValueError: one line: an unknown name, an option given for another policy than its own, a value out of
            range, ``--ddim-steps`` above ``--diffusion-timesteps``.
    """
    kept: dict = {}
    for name, value in given.items():
        if value is None:
            continue
        if name not in _BY_NAME:
            raise ValueError(f"unknown learner option {name!r}; known: {', '.join(_BY_NAME)}")
        option = _BY_NAME[name]
        if option.policy != policy:
            raise ValueError(f"{option.flag} applies to --policy {option.policy} only, not {policy}")
        if option.check(value) != option.default:
            kept[name] = value
    if policy == "diffusion":
        steps, levels = (kept.get(n, _BY_NAME[n].default) for n in ("ddim_steps", "diffusion_timesteps"))
        if steps > levels:
            raise ValueError(f"--ddim-steps must be at most --diffusion-timesteps ({levels}); got {steps}")
    return tuple(sorted(kept.items()))


def learner_keywords(options: LearnerOptions | Mapping) -> dict:
    """The learner's constructor arguments of ``options`` (``{}`` for none): each option's keyword, the denoiser's
    ``hidden_sizes`` = ``(width,) * depth`` where either is given."""
    values = dict(options)
    keywords = {_BY_NAME[name].keyword: value for name, value in values.items()
                if name not in ("denoiser_width", "denoiser_depth")}
    if "denoiser_width" in values or "denoiser_depth" in values:
        width = values.get("denoiser_width", _BY_NAME["denoiser_width"].default)
        keywords["hidden_sizes"] = (width,) * values.get("denoiser_depth", _BY_NAME["denoiser_depth"].default)
    return keywords


def default_learning_rate(kind: Any) -> float:
    """The learning rate a learner kind declares (``default_learning_rate``), else :data:`DEFAULT_LEARNING_RATE`."""
    rate = getattr(kind, "default_learning_rate", None)
    return DEFAULT_LEARNING_RATE if rate is None else float(rate)


def options_label(options: LearnerOptions) -> str:
    """What the options add to a trained score's cache label: ``""`` for none (the label as before), else
    ``|name=value,...``."""
    return "" if not options else "|" + ",".join(f"{name}={value}" for name, value in options)
