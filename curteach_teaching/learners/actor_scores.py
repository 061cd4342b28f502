"""The log-probability of given actions under an SB3 actor, computed without a ``torch.distributions`` object: the
training step's side of the action seam (:mod:`~curteach_teaching.learners.actions`).

imitation's BC loss asks the policy for ``log pi(a | s)`` of every state-action pair of a batch; SB3 answers by
building a torch distribution for the batch (``Categorical``, ``Normal``, ``Bernoulli``, one ``Categorical`` per
dimension of a ``MultiDiscrete``), which checks its arguments' values and the actions' support every time. On a small
network that object costs about as much as the network's own step. :func:`actor_log_prob` runs the same tensor
operations on the same tensors, in the same order, as torch's distributions and SB3's sums over action dimensions:

* categorical: ``logits - logits.logsumexp(-1, keepdim=True)``, then ``gather`` of each action's entry (without
  the entropy: the action's logit gathered, then the same subtraction); its entropy
  ``-(clamp(logp, min=finfo.min) * softmax(logp)).sum(-1)``;
* diagonal Gaussian: ``std = ones_like(mean) * exp(log_std)`` (SB3's), ``-((a - mean) ** 2) / (2 * std ** 2) -
  log(std) - log(sqrt(2 pi))`` summed over the action's dimensions; its entropy ``0.5 + 0.5 log(2 pi) + log(std)``
  summed;
* multi-categorical: the categorical's per dimension on SB3's split of the logits, stacked and summed;
* Bernoulli: ``-binary_cross_entropy_with_logits(logits, a)`` summed; its entropy
  ``binary_cross_entropy_with_logits(logits, sigmoid(logits))`` summed,

so the log-probabilities, the entropies and every gradient are the same to the bit (a test compares them with SB3's
``evaluate_actions``). torch's argument checks, when on (torch's default; the CPU step keeps them), are kept in
effect: a batch whose values could fail them (a log-probability that is not finite, actions of another shape or
dtype than the distribution scores, a Bernoulli action other than 0 and 1, a categorical action outside the logits,
which ``gather`` refuses on the CPU) is scored again through SB3's distribution built from the same outputs (the
network runs once), which raises torch's own error or gives the same numbers. The policies computed here are SB3's
``ActorCriticPolicy`` and its subclasses that keep its way of building the distribution (or take the bounded
Gaussian head of :mod:`~curteach_teaching.learners.gaussian`). Off the CPU with the checks on, and for any other
policy or distribution (a policy that builds its distribution its own way, or whose methods were replaced on the
instance; state-dependent noise), the policy's own distribution is asked
(:func:`~curteach_teaching.learners.actions.log_prob_and_entropy`).

The library's logits policies (:class:`~curteach_teaching.learners.logits_policy.LogitsPolicy`: the navigation CNN,
BabyAI's FiLM network) build no distribution object; their own scores
(:meth:`~curteach_teaching.learners.logits_policy.LogitsPolicy.score_actions`) are taken without the entropy where
no one needs it, and without their range check of the actions where it would read them from the device (off the
CPU with torch's checks off, as in the training step, whose pool's actions were checked once); on the CPU ``gather``
refuses an action outside the logits, and the policy's own ``evaluate_actions`` then raises its error.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from curteach_teaching.learners.actions import log_prob_and_entropy
from curteach_teaching.learners.lean_step import actor_outputs

__all__ = ["actor_log_prob"]


#: ``(policy class, SB3 distribution class) -> (kind, bounded)`` or ``None``, as :func:`_head_kind` finds them
_HEADS: dict = {}
#: ``policy class -> bool``, as :func:`_own_scores` finds it
_OWN_SCORES: dict = {}


def _patched(policy: Any, *names: str) -> bool:
    """Whether one of these methods is replaced on the instance itself (a wrapper someone installed is called)."""
    own = getattr(policy, "__dict__", {})
    return any(name in own for name in names)


def _head_kind(cls: type, head: type) -> tuple[str, bool] | None:
    """``(kind, bounded)`` of a policy class whose distribution is built by SB3's ``ActorCriticPolicy`` itself (or by
    the bounded Gaussian head of :mod:`~curteach_teaching.learners.gaussian`), for the kinds computed here; else
    ``None``."""
    from stable_baselines3.common import distributions as d
    from stable_baselines3.common.policies import ActorCriticPolicy

    from curteach_teaching.learners.gaussian import BOUNDED_HEAD

    if not issubclass(cls, ActorCriticPolicy):
        return None
    if (cls.evaluate_actions is not ActorCriticPolicy.evaluate_actions
            or cls.get_distribution is not ActorCriticPolicy.get_distribution):
        return None
    latent_head = cls._get_action_dist_from_latent
    if latent_head is not ActorCriticPolicy._get_action_dist_from_latent and latent_head is not BOUNDED_HEAD:
        return None
    kinds = {d.CategoricalDistribution: "categorical", d.DiagGaussianDistribution: "gaussian",
             d.MultiCategoricalDistribution: "multi-categorical", d.BernoulliDistribution: "bernoulli"}
    return (kinds[head], latent_head is BOUNDED_HEAD) if head in kinds else None


def _actor_head(policy: Any) -> tuple[str, Any] | None:
    """``(kind, log_std or None)`` of ``policy`` (:func:`_head_kind`), or ``None``."""
    if _patched(policy, "evaluate_actions", "get_distribution", "_get_action_dist_from_latent"):
        return None
    key = type(policy), type(getattr(policy, "action_dist", None))
    if key not in _HEADS:
        _HEADS[key] = _head_kind(*key)
    found = _HEADS[key]
    if found is None:
        return None
    kind, bounded = found
    if kind != "gaussian":
        return kind, None
    return kind, policy.distribution_log_std() if bounded else policy.log_std


def _own_scores(policy: Any) -> bool:
    """Whether ``policy`` is one of the library's logits policies scoring as
    :class:`~curteach_teaching.learners.logits_policy.LogitsPolicy` does (no distribution object either)."""
    cls = type(policy)
    if _patched(policy, "evaluate_actions", "score_actions"):
        return False
    if cls not in _OWN_SCORES:
        from curteach_teaching.learners.logits_policy import LogitsPolicy

        _OWN_SCORES[cls] = (issubclass(cls, LogitsPolicy) and cls.evaluate_actions is LogitsPolicy.evaluate_actions
                            and cls.score_actions is LogitsPolicy.score_actions)
    return _OWN_SCORES[cls]


def _categorical(logits: Any, actions: Any, entropy: bool) -> tuple[Any, Any]:
    """torch's ``Categorical(logits=logits)``: ``(log_prob (B,), entropy (B,) or None)``."""
    import torch as th
    import torch.nn.functional as F

    index = (actions if actions.dtype == th.int64 else actions.long()).unsqueeze(-1)
    lse = logits.logsumexp(dim=-1, keepdim=True)
    if not entropy:
        # gathered first: each log-probability is the same subtraction of the same two numbers, and the gradient
        # reaching the logits is the same sum of the same two terms (the row sum of the subtraction's gradient,
        # which the full subtraction reduces, holds the one action's entry and zeros), at a fraction of the work
        return (logits.gather(-1, index) - lse).squeeze(-1), None
    logp = logits - lse
    log_prob = logp.gather(-1, index).squeeze(-1)
    p_log_p = th.clamp(logp, min=th.finfo(logp.dtype).min) * F.softmax(logp, dim=-1)
    return log_prob, -p_log_p.sum(-1)


def _gaussian(mean: Any, log_std: Any, actions: Any, entropy: bool) -> tuple[Any, Any]:
    """SB3's ``DiagGaussianDistribution`` (torch's ``Normal``, summed over dimension 1)."""
    import torch as th

    scale = th.ones_like(mean) * log_std.exp()
    var = scale**2
    log_scale = scale.log()
    log_prob = (-((actions - mean) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))).sum(dim=1)
    if not entropy:
        return log_prob, None
    return log_prob, (0.5 + 0.5 * math.log(2 * math.pi) + th.log(scale)).sum(dim=1)


def _multi_categorical(logits: Any, action_dims: list, actions: Any, entropy: bool) -> tuple[Any, Any]:
    """SB3's ``MultiCategoricalDistribution``: one ``Categorical`` per split of the logits."""
    import torch as th

    scores = [_categorical(split, action, entropy)
              for split, action in zip(th.split(logits, action_dims, dim=1), th.unbind(actions, dim=1), strict=True)]
    log_prob = th.stack([s[0] for s in scores], dim=1).sum(dim=1)
    return log_prob, th.stack([s[1] for s in scores], dim=1).sum(dim=1) if entropy else None


def _bernoulli(logits: Any, actions: Any, entropy: bool) -> tuple[Any, Any]:
    """SB3's ``BernoulliDistribution`` (torch's ``Bernoulli(logits=...)``, summed over dimension 1)."""
    import torch as th
    import torch.nn.functional as F

    log_prob = (-F.binary_cross_entropy_with_logits(logits, actions, reduction="none")).sum(dim=1)
    if not entropy:
        return log_prob, None
    return log_prob, F.binary_cross_entropy_with_logits(logits, th.sigmoid(logits), reduction="none").sum(dim=1)


def _scores_as_given(kind: str, out: Any, actions: Any, policy: Any) -> bool:
    """Whether ``actions`` have the shape and dtype torch's distribution scores for these outputs (else the
    distribution itself is asked, which raises where torch does)."""
    if kind == "categorical":
        return actions.shape == out.shape[:-1] and actions.dtype in _integers()
    if kind == "multi-categorical":
        width = len(policy.action_dist.action_dims)
        return tuple(actions.shape) == (out.shape[0], width) and actions.dtype in _integers()
    if kind == "bernoulli":
        return actions.shape == out.shape and actions.is_floating_point()
    return actions.shape == out.shape


@functools.cache
def _integers() -> frozenset:
    """The dtypes of categorical actions scored here (``gather`` takes them after ``.long()``)."""
    import torch as th

    return frozenset((th.uint8, th.int8, th.int16, th.int32, th.int64))


def _passes_checks(kind: str, log_prob: Any, actions: Any) -> bool:
    """Whether torch's argument checks certainly pass on this batch: every log-probability is finite (a NaN
    parameter, a non-positive standard deviation or a NaN action makes one NaN or infinite; a finite sum of finite
    terms), and Bernoulli actions are 0 or 1 (a categorical action outside the logits has already failed
    ``gather``)."""
    if not math.isfinite(float(log_prob.detach().sum())):
        return False
    return kind != "bernoulli" or bool(((actions == 0) | (actions == 1)).all())


def actor_log_prob(policy: Any, obs: Any, actions: Any, *, entropy: bool = True) -> tuple[Any, Any]:
    """``(log pi(a | s) (B,), entropy (B,) or None)``: the numbers of
    :func:`~curteach_teaching.learners.actions.log_prob_and_entropy`, to the bit, without a distribution object
    where the policy's distribution is one computed here (see the module docstring).

    Args:
        policy: anything with ``evaluate_actions(obs, actions) -> (values, log_prob, entropy)``.
        obs: ``(B, ...)`` observation tensors (a dict of tensors for a ``Dict`` space) on the policy's device.
        actions: ``(B, ...)`` action tensor on the policy's device, scored as given.
        entropy: also compute the entropy of every state's distribution (``None`` in its place otherwise).
    """
    import torch as th

    validate = th.distributions.Distribution._validate_args
    on_cpu = actions.device.type == "cpu"
    if _own_scores(policy):
        try:
            # on the CPU gather refuses an action outside the logits; off it the range check reads the actions
            # from the device, so the step (torch's checks off) skips it
            return policy.score_actions(obs, actions, entropy=entropy, check_range=validate and not on_cpu)
        except RuntimeError:
            if not on_cpu:
                raise
            log_prob, ent = log_prob_and_entropy(policy, obs, actions)  # its own ValueError
            return log_prob, ent if entropy else None
    head = _actor_head(policy) if not validate or on_cpu else None
    if head is None:
        log_prob, ent = log_prob_and_entropy(policy, obs, actions)
        return log_prob, ent if entropy else None
    kind, log_std = head
    # ActorCriticPolicy.get_distribution's path up to the distribution's parameters
    out = actor_outputs(policy, obs)
    if not _scores_as_given(kind, out, actions, policy):
        return _distribution_scores(policy, kind, out, log_std, actions, entropy)
    try:
        if kind == "categorical":
            log_prob, ent = _categorical(out, actions, entropy)
        elif kind == "gaussian":
            log_prob, ent = _gaussian(out, log_std, actions, entropy)
        elif kind == "multi-categorical":
            log_prob, ent = _multi_categorical(out, list(policy.action_dist.action_dims), actions, entropy)
        else:
            log_prob, ent = _bernoulli(out, actions, entropy)
    except RuntimeError:
        if not validate:
            raise
        log_prob = None  # an action outside the logits: torch's check says so in its words
    if validate and (log_prob is None or not _passes_checks(kind, log_prob, actions)):
        return _distribution_scores(policy, kind, out, log_std, actions, entropy)
    return log_prob, ent


def _distribution_scores(policy: Any, kind: str, out: Any, log_std: Any, actions: Any,
                         entropy: bool) -> tuple[Any, Any]:
    """The scores of SB3's own distribution, built from the outputs already computed as the policy builds it (the
    network is not run again: a layer that draws, such as dropout, draws once), with torch's checks."""
    distribution = policy.action_dist
    if kind == "gaussian":
        distribution.proba_distribution(out, log_std)
    else:
        distribution.proba_distribution(action_logits=out)
    return distribution.log_prob(actions), distribution.entropy() if entropy else None
