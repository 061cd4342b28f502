"""SB3's actor-critic policies with a bounded log standard deviation, the learner for continuous (``Box``) actions.

SB3's ``ActorCriticPolicy`` on a ``Box`` action space is a diagonal Gaussian whose mean is the network's output and
whose log standard deviation is one free parameter per action dimension (state-independent, ``log_std``). Trained by
behaviour cloning on near-deterministic demonstrations (a scripted controller, a bot), the likelihood keeps rewarding
a narrower Gaussian: ``log_std`` falls without bound, every log-density grows toward ``+inf``, the loss toward
``-inf``, and one badly predicted step costs ``(a - mu)^2 / (2 sigma^2)``, which overflows. Here the distribution
uses ``log_std`` clamped to ``[LOG_STD_MIN, LOG_STD_MAX] = [-5, 2]`` (standard deviations from about 0.0067 to 7.4
in the action's units): a step's log-density is then at most ``5 - log(2 pi) / 2 = 4.08`` per dimension, and the
difficulty scores and the loss stay finite. Past a bound the parameter gets no gradient, so the standard deviation
stays at the bound. Everything else (the MLP, the CNN or the multi-input extractor, the initialisation) is SB3's.
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common import distributions, policies

__all__ = ["BOUNDED_HEAD", "LOG_STD_MAX", "LOG_STD_MIN", "BoundedActorCriticCnnPolicy", "BoundedActorCriticPolicy",
           "BoundedMultiInputActorCriticPolicy"]

#: the bounds of the Gaussian's log standard deviation (see the module docstring)
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class _BoundedLogStd:
    """Overrides SB3's distribution head: a diagonal Gaussian takes ``log_std`` clamped to the bounds."""

    def distribution_log_std(self) -> Any:
        """``(D,)`` the log standard deviation the Gaussian takes: ``log_std`` clamped to the bounds."""
        return self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def _get_action_dist_from_latent(self, latent_pi: Any) -> distributions.Distribution:
        if isinstance(self.action_dist, distributions.DiagGaussianDistribution) and not isinstance(
                self.action_dist, distributions.SquashedDiagGaussianDistribution):
            mean_actions = self.action_net(latent_pi)
            return self.action_dist.proba_distribution(mean_actions, self.distribution_log_std())
        return super()._get_action_dist_from_latent(latent_pi)


#: the distribution head of the bounded policies (the training step's log-probability recognises it)
BOUNDED_HEAD = _BoundedLogStd._get_action_dist_from_latent


class BoundedActorCriticPolicy(_BoundedLogStd, policies.ActorCriticPolicy):
    """SB3's MLP ``ActorCriticPolicy`` with the bounded log standard deviation."""


class BoundedActorCriticCnnPolicy(_BoundedLogStd, policies.ActorCriticCnnPolicy):
    """SB3's ``ActorCriticCnnPolicy`` (Nature CNN) with the bounded log standard deviation."""


class BoundedMultiInputActorCriticPolicy(_BoundedLogStd, policies.MultiInputActorCriticPolicy):
    """SB3's ``MultiInputActorCriticPolicy`` (``Dict`` observations) with the bounded log standard deviation."""
