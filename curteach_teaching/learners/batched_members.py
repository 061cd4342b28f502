"""``K`` BC policies of one kind trained as one batched model: the ensemble teacher's members in one optimizer loop.

The ensemble teacher (:mod:`~curteach_teaching.datasets.scores.ensemble`) fits ``K`` small BC policies, each on its own
bootstrap half of the demonstrations, and scores every demonstration by each member's mean per-step
log-likelihood. Trained one after another, each member pays the per-step Python cost of a step (the batch's gather,
a dozen kernels, Adam's loop over the parameters) for a network whose arithmetic takes microseconds. Here the
members' parameters are stacked along a leading member axis (``torch.func.stack_module_state``), and every step
runs all ``K`` members at once:

* the network: for SB3's MLP (a flattened observation, linear layers with elementwise activations, a linear action
  head) batched matrix products on the stacked weights; for any other ``ActorCriticPolicy`` actor (Nature CNN)
  ``torch.func.vmap`` over ``functional_call`` of the member's own modules;
* the loss: imitation's BC loss per member, ``-mean log pi(a | s) - ent_weight * mean entropy`` (L2 weight 0), on
  member ``k``'s own batch; the step backpropagates the sum over members, whose gradient with respect to member
  ``k``'s slice is member ``k``'s own loss's gradient (no term couples two members);
* the optimizer: one ``torch.optim.Adam`` (``fused``: one kernel per tensor) over the stacked tensors. Adam's update
  is elementwise (each entry's moments, bias corrections and step depend on that entry's gradients alone, and every
  member takes the same number of steps), so one Adam over a ``(K, ...)`` tensor is ``K`` independent Adams, one per
  slice (a test shows it);
* the batches: member ``k``'s net and batch seeds are the ensemble's (:func:`member_seeds`), its batches those of
  ``CurriculumBC``'s fixed-step scheme (:func:`plan_batches`: its half's transitions shuffled by a NumPy generator
  seeded with the batch seed, laid end to end, shuffled anew when they run out). Each member keeps its own stream.

For the default policy (SB3's MLP with ``tanh`` or ``ReLU`` units and a diagonal Gaussian head, bounded or not) the
step is written out instead (:mod:`~curteach_teaching.learners.batched_gaussian_step`: the same loss and Adam, the
gradients by hand into buffers allocated once, no autograd graph), which took about half the autograd step's time
here.

So member ``k`` is the network, loss, optimizer and batch sequence of the sequential fit; only the kernels differ
(a batched product sums in another order), so its numbers agree with the sequential fit's to float rounding, not to
the bit. On a given device and thread count the fit is deterministic: it draws from no global generator.

Batched here: ``ActorCriticPolicy`` actors (SB3's own or the bounded Gaussian of
:mod:`~curteach_teaching.learners.gaussian`) with categorical, diagonal Gaussian or multi-categorical heads on
non-``Dict`` observations: the built-in kinds ``mlp``, ``mlp-256`` and ``cnn``. Not batched (:func:`batch_reason`
says why; the caller trains those one after another): BabyAI's FiLM policy and other logits policies (their own
network and scores; BabyAI's runs its mission GRU over packed sequences cut to each batch's longest mission, shapes
that depend on the data, which ``vmap`` cannot batch), ``Dict`` observations (``multi-input``), other distributions
and policies that build their distribution their own way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.difficulty import MIN_LOG_PROB

__all__ = ["BatchedMembers", "batch_reason", "batched_log_likelihoods", "fit_members", "member_log_likelihoods",
           "member_seeds", "plan_batches"]

#: the actor's parameters; the critic's (value head, its own extractor) get no gradient in BC and are not stacked
_CRITIC = ("policy.value_net.", "policy.mlp_extractor.value_net.", "policy.vf_features_extractor.")


def member_seeds(seed: int, k: int) -> tuple[int, int]:
    """``(net_seed, batch_seed)`` of the ensemble's member ``k``: the two children of ``SeedSequence([seed, k, 1])``,
    as the ensemble teacher draws them."""
    net, batch = (int(s.generate_state(1)[0]) for s in np.random.SeedSequence([seed, k, 1]).spawn(2))
    return net, batch


def plan_batches(transitions: np.ndarray, steps: int, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """``(steps, batch_size)`` int64 transition indices: ``transitions`` (the member's half, in order) shuffled by
    ``rng`` and laid end to end, shuffled anew each time they run out (``CurriculumBC``'s fixed-step batches)."""
    need = steps * batch_size
    passes = -(-need // transitions.size)
    drawn = np.concatenate([transitions[rng.permutation(transitions.size)] for _ in range(passes)])[:need]
    return drawn.reshape(steps, batch_size).astype(np.int64)


def _head(policy: Any) -> tuple[str, bool] | str:
    """``(kind, bounded)`` of a policy whose actor is batched here, or the reason it is not."""
    from stable_baselines3.common import distributions as d
    from stable_baselines3.common.policies import ActorCriticPolicy

    from curteach_teaching.learners.gaussian import BOUNDED_HEAD
    from curteach_teaching.learners.logits_policy import LogitsPolicy

    cls = type(policy)
    if not isinstance(policy, ActorCriticPolicy):
        return f"{cls.__name__} is not an SB3 ActorCriticPolicy"
    if isinstance(policy, LogitsPolicy):
        # BabyAI's FiLM network runs its mission GRU over packed sequences cut to the batch's longest mission: shapes
        # that depend on the data, which vmap cannot batch
        return f"{cls.__name__} is a logits policy (its own network and scores; BabyAI's packs its missions per batch)"
    if (cls.evaluate_actions is not ActorCriticPolicy.evaluate_actions
            or cls.get_distribution is not ActorCriticPolicy.get_distribution
            or cls._get_action_dist_from_latent not in (ActorCriticPolicy._get_action_dist_from_latent, BOUNDED_HEAD)
            or any(name in vars(policy) for name in ("evaluate_actions", "get_distribution"))):
        return f"{cls.__name__} builds its action distribution its own way"
    if policy.observation_space.__class__.__name__ == "Dict":
        return "Dict observations (multi-input) are not batched"
    kinds = {d.CategoricalDistribution: "categorical", d.DiagGaussianDistribution: "gaussian",
             d.MultiCategoricalDistribution: "multi-categorical"}
    kind = kinds.get(type(policy.action_dist))
    if kind is None:
        return f"its {type(policy.action_dist).__name__} is not batched (categorical, Gaussian, multi-categorical)"
    return kind, cls._get_action_dist_from_latent is BOUNDED_HEAD


def batch_reason(policy: Any) -> str | None:
    """``None`` where :class:`BatchedMembers` trains policies like ``policy``; else one line saying why not."""
    found = _head(policy)
    return found if isinstance(found, str) else None


def _is_mlp(policy: Any) -> bool:
    """SB3's MLP actor: flattened observations, ``Linear`` layers and parameter-free activations, a ``Linear`` head."""
    import torch as th
    from stable_baselines3.common.torch_layers import FlattenExtractor

    layers = list(policy.mlp_extractor.policy_net)
    return (isinstance(policy.pi_features_extractor, FlattenExtractor) and isinstance(policy.action_net, th.nn.Linear)
            and all(isinstance(m, th.nn.Linear) or not list(m.parameters()) for m in layers))


@functools.cache
def _actor_class() -> type:
    """The module of one policy's actor path: preprocessed observations -> the action head's output (one class, made
    once: ``stack_module_state`` stacks modules of one class)."""
    import torch as th

    class Actor(th.nn.Module):
        def __init__(self, policy: Any):
            super().__init__()
            self.policy = policy

        def forward(self, x: Any) -> Any:
            p = self.policy
            return p.action_net(p.mlp_extractor.forward_actor(p.pi_features_extractor(x)))

    return Actor


class BatchedMembers:
    """``K`` policies of one kind as stacked tensors (see the module docstring).

    Args:
        policies: the ``K`` freshly built policies (the same class and spaces; their weights are copied, not shared).
        device: where the stacked members live.

    Attributes:
        params: ``{name: (K, ...) leaf tensor}`` the actors' stacked parameters; kind: the head's kind; size: K;
            is_image: whether the observations are images (preprocessed per batch, not once for the pool).

    Raises:
        ValueError: a policy that is not batched (:func:`batch_reason`), or fewer than one policy.
    """

    def __init__(self, policies: Sequence[Any], device: Any = "cpu"):
        import torch as th
        from torch.func import stack_module_state

        if not policies:
            raise ValueError("no policies to stack")
        found = _head(policies[0])
        if isinstance(found, str):
            raise ValueError(f"the members cannot be batched: {found}")
        self.kind, self.bounded = found
        self.device = th.device(device)
        self.template = policies[0]
        self.size = len(policies)
        actors = [_actor_class()(p) for p in policies]
        params, self.buffers = stack_module_state(actors)
        self.params = {name: value.detach().to(self.device).requires_grad_(True) for name, value in params.items()
                       if not name.startswith(_CRITIC)}
        self.buffers = {name: value.to(self.device) for name, value in self.buffers.items()}
        self._base = _actor_class()(self.template.to(self.device))
        self._mlp = _is_mlp(self.template)
        from stable_baselines3.common.preprocessing import is_image_space

        #: whether observations are images (kept as stored, preprocessed per batch)
        self.is_image = is_image_space(self.template.observation_space, check_channels=False)
        if self._mlp:
            self._layers = [("linear", f"policy.mlp_extractor.policy_net.{i}") if isinstance(m, th.nn.Linear)
                            else ("act", m) for i, m in enumerate(self.template.mlp_extractor.policy_net)]
            self._layers.append(("linear", "policy.action_net"))

    def preprocess(self, obs: Any) -> Any:
        """``(B, ...)`` observations as the policy's features extractor takes them (SB3's ``preprocess_obs``)."""
        from stable_baselines3.common.preprocessing import preprocess_obs

        policy = self.template
        return preprocess_obs(obs, policy.observation_space, normalize_images=policy.normalize_images)

    def outputs(self, x: Any, *, shared: bool = False) -> Any:
        """The action heads' outputs ``(K, B, A)`` of preprocessed observations ``x``: ``(K, B, ...)`` one batch per
        member, or ``(B, ...)`` rows shared by all members (``shared``)."""
        import torch as th

        if not self._mlp:
            from torch.func import functional_call, vmap

            def one(params: dict, buffers: dict, rows: Any) -> Any:
                return functional_call(self._base, (params, buffers), (rows,))

            return vmap(one, in_dims=(0, 0, None if shared else 0))(self.params, self.buffers, x)
        h = x.flatten(1) if shared else x.flatten(2)
        for what, layer in self._layers:
            if what == "act":
                h = layer(h)
                continue
            weight, bias = self.params[f"{layer}.weight"], self.params[f"{layer}.bias"]
            if h.dim() == 2:  # shared rows: (B, F) @ (K, F, H) broadcasts to (K, B, H)
                h = th.matmul(h, weight.transpose(1, 2)) + bias.unsqueeze(1)
            else:
                h = th.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))
        return h

    def log_prob(self, x: Any, actions: Any, *, shared: bool = False, entropy: bool = True) -> tuple[Any, Any]:
        """``(log pi_k(a | s) (K, B), entropy (K, B) or None)`` of ``actions`` at preprocessed observations ``x``:
        ``(K, B, ...)`` each, or ``(B, ...)`` rows shared by all members (``shared``). The arithmetic of SB3's
        distributions (torch's ``Categorical``, ``Normal`` summed over the action's dimensions) on every member's
        rows; actions scored as given."""
        import math

        import torch as th
        import torch.nn.functional as F

        out = self.outputs(x, shared=shared)
        K, B = out.shape[0], out.shape[1]

        def categorical(logits: Any, acts: Any) -> tuple[Any, Any]:
            logp = logits - logits.logsumexp(dim=-1, keepdim=True)
            index = acts.long().expand(K, B).unsqueeze(-1)
            chosen = logp.gather(-1, index).squeeze(-1)
            if not entropy:
                return chosen, None
            return chosen, -(th.clamp(logp, min=th.finfo(logp.dtype).min) * F.softmax(logp, dim=-1)).sum(-1)

        if self.kind == "categorical":
            return categorical(out, actions)
        if self.kind == "multi-categorical":
            dims = list(self.template.action_dist.action_dims)
            parts = [categorical(split, actions[..., j]) for j, split in enumerate(th.split(out, dims, dim=-1))]
            total = th.stack([p[0] for p in parts], dim=-1).sum(-1)
            return total, th.stack([p[1] for p in parts], dim=-1).sum(-1) if entropy else None
        log_std = self.params["policy.log_std"]
        if self.bounded:
            from curteach_teaching.learners.gaussian import LOG_STD_MAX, LOG_STD_MIN

            log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        scale = th.ones_like(out) * log_std.exp().unsqueeze(1)
        acts = actions.reshape(*actions.shape[: actions.dim() - len(self.template.action_space.shape)], -1)
        log_scale = scale.log()
        log_prob = (-((acts - out) ** 2) / (2 * scale**2) - log_scale - math.log(math.sqrt(2 * math.pi))).sum(-1)
        return log_prob, (0.5 + 0.5 * math.log(2 * math.pi) + log_scale).sum(-1) if entropy else None

    def member_state(self, k: int) -> dict:
        """``{name: tensor}`` member ``k``'s actor parameters, named as in its policy (``policy.`` dropped)."""
        return {name.removeprefix("policy."): value[k].detach() for name, value in self.params.items()}

    def load_member(self, k: int, policy: Any) -> Any:
        """``policy`` (of the same kind) with its actor's parameters set to member ``k``'s; returns it."""
        import torch as th

        own = dict(policy.named_parameters())
        with th.no_grad():
            for name, value in self.member_state(k).items():
                own[name].copy_(value.to(own[name].device))
        return policy


@dataclass(frozen=True)
class _Pool:
    """The flattened demonstrations on the training device: observations ``(T, ...)``, actions ``(T, ...)`` and the
    layout (``lengths (N,)``, ``demo_of (T,)``)."""

    obs: Any
    acts: Any
    lengths: np.ndarray
    demo_of: np.ndarray

    @classmethod
    def of(cls, demonstrations: Sequence[Any], device: Any) -> _Pool:
        import torch as th
        from imitation.data import rollout, types

        flat = rollout.flatten_trajectories(list(demonstrations))
        obs = types.maybe_unwrap_dictobs(flat.obs)
        if isinstance(obs, dict):
            raise ValueError("Dict observations (multi-input) are not batched")
        lengths = np.array([len(d.acts) for d in demonstrations], dtype=np.int64)
        # copies (the flattened arrays may be read-only views): the pool is the fit's own
        return cls(th.tensor(np.asarray(obs), device=device), th.tensor(np.asarray(flat.acts), device=device),
                   lengths, np.repeat(np.arange(len(lengths)), lengths))


def fit_members(demonstrations: Sequence[Any], in_bag: np.ndarray, make_policy: Callable[[int], Any], *, seed: int,
                batches: int, batch_size: int, learning_rate: float, ent_weight: float = 1e-3,
                device: Any = "cpu") -> tuple[BatchedMembers, np.ndarray]:
    """Train the ensemble's ``K`` members as one batched model (see the module docstring).

    Args:
        demonstrations: the N imitation ``Trajectory`` objects.
        in_bag: ``(K, N)`` bool, member ``k``'s half.
        make_policy: ``seed -> SB3 policy`` (a fresh network per call); member ``k`` is ``make_policy(net_seed)`` of
            :func:`member_seeds`.
        seed: the ensemble's seed; batches: optimizer steps (all members step together); batch_size: transitions
            per member per step; learning_rate: Adam's; ent_weight: BC's entropy weight (imitation's default 1e-3).
        device: where the members train.

    Returns:
        ``(members, losses)``: the trained :class:`BatchedMembers` and ``(batches, K)`` float64 each member's BC loss
        at every step (before that step's update).

    Raises:
        ValueError: a policy that is not batched (:func:`batch_reason`), an empty half, ``in_bag`` of another shape.
    """
    import torch as th

    in_bag = np.asarray(in_bag, dtype=bool)
    K = in_bag.shape[0]
    if in_bag.ndim != 2 or in_bag.shape[1] != len(demonstrations):
        raise ValueError(f"in_bag must have shape (K, {len(demonstrations)}); got {in_bag.shape}")
    seeds = [member_seeds(seed, k) for k in range(K)]
    members = BatchedMembers([make_policy(net) for net, _ in seeds], device)
    pool = _Pool.of(demonstrations, members.device)
    plans = []
    for k, (_, batch_seed) in enumerate(seeds):
        half = np.flatnonzero(np.repeat(in_bag[k], pool.lengths))
        if half.size == 0:
            raise ValueError(f"ensemble member {k}'s half holds no transitions")
        plans.append(plan_batches(half, batches, batch_size, np.random.default_rng(batch_seed)))
    index = th.as_tensor(np.stack(plans, axis=1), device=members.device)  # (batches, K, batch_size), one copy
    # preprocessing is row by row (a dtype, a one-hot, a scale): done once for the pool where that costs no more memory
    # than a few copies of it (not for images, whose floats take four times their bytes), per batch otherwise
    prepared = not members.is_image
    features = members.preprocess(pool.obs) if prepared else pool.obs
    from curteach_teaching.learners.batched_gaussian_step import step_reason

    if prepared and step_reason(members) is None:  # the default MLP Gaussian: the step written out
        return members, _written_out(members, features, pool.acts, index, batch_size, learning_rate, ent_weight)
    # fused: one kernel per tensor for the whole update; the same elementwise rule as the for-loop Adam of BC
    optimizer = th.optim.Adam(list(members.params.values()), lr=learning_rate, fused=True)
    losses = th.empty((batches, K), dtype=th.float64, device=members.device)
    with_entropy = ent_weight != 0
    for step in range(batches):
        rows = index[step].reshape(-1)
        x = features.index_select(0, rows)
        x = x if prepared else members.preprocess(x)
        x = x.reshape(K, batch_size, *x.shape[1:])
        acts = pool.acts.index_select(0, rows)
        acts = acts.reshape(K, batch_size, *acts.shape[1:])
        log_prob, entropy = members.log_prob(x, acts, entropy=with_entropy)
        loss = -log_prob.mean(dim=1)  # BC's neglogp, per member
        if with_entropy:
            loss = loss + -ent_weight * entropy.mean(dim=1)
        loss.sum().backward()  # member k's slice gets the gradient of its own loss alone
        optimizer.step()
        optimizer.zero_grad()
        losses[step] = loss.detach()  # stays on the device: no synchronisation per step
    return members, losses.cpu().numpy()


def _written_out(members: BatchedMembers, features: Any, actions: Any, index: Any, batch_size: int,
                 learning_rate: float, ent_weight: float) -> np.ndarray:
    """:func:`fit_members`'s loop for stacked MLP Gaussian members with the step written out
    (:class:`~curteach_teaching.learners.batched_gaussian_step.GaussianMLPStep`): each step's rows gathered into
    buffers allocated once (``index`` ``(batches, K, batch_size)``); returns the ``(batches, K)`` float64 losses."""
    import torch as th

    from curteach_teaching.learners.batched_gaussian_step import GaussianMLPStep

    batches, K = index.shape[0], index.shape[1]
    step = GaussianMLPStep(members, batch_size=batch_size, steps=batches, learning_rate=learning_rate,
                           ent_weight=ent_weight)
    dtype = step.flat.dtype
    # the step takes flat rows in the parameters' dtype: converted once for the pool, not per batch
    features = features.flatten(1).to(dtype).contiguous()
    actions = actions.reshape(actions.shape[0], -1).to(dtype).contiguous()
    x = th.empty((K * batch_size, features.shape[1]), dtype=dtype, device=features.device)
    a = th.empty((K * batch_size, actions.shape[1]), dtype=dtype, device=features.device)
    for i in range(batches):
        rows = index[i].view(-1)
        th.index_select(features, 0, rows, out=x)
        th.index_select(actions, 0, rows, out=a)
        step.step(i, x.view(K, batch_size, -1), a.view(K, batch_size, -1))
    return step.losses()


def member_log_likelihoods(members: BatchedMembers, demonstrations: Sequence[Any], *, chunk_size: int = 4096,
                           min_log_prob: float = MIN_LOG_PROB) -> np.ndarray:
    """``(K, N)`` float64 each member's mean per-step log-likelihood of each demonstration: no-grad passes of
    ``chunk_size`` transitions through all members at once, each step floored at ``min_log_prob`` (as the
    sequential scores are), the sum divided by the demonstration's length.

    Raises:
        ValueError: a member with a NaN or ``+inf`` step log-likelihood (a diverged fit), named.
    """
    import torch as th

    pool = _Pool.of(demonstrations, members.device)
    T = len(pool.demo_of)
    per_step = np.empty((members.size, T), dtype=np.float64)
    with th.no_grad():
        for begin in range(0, T, chunk_size):
            end = min(T, begin + chunk_size)
            scored, _ = members.log_prob(members.preprocess(pool.obs[begin:end]), pool.acts[begin:end], shared=True,
                                         entropy=False)
            per_step[:, begin:end] = scored.double().cpu().numpy()
    for k in range(members.size):
        if np.isnan(per_step[k]).any() or np.isposinf(per_step[k]).any():
            raise ValueError(f"ensemble member {k} gave log-likelihoods that are not finite (did BC diverge? try a "
                             "smaller learning rate)")
    floored = np.maximum(per_step, min_log_prob)
    n = len(pool.lengths)
    sums = np.stack([np.bincount(pool.demo_of, weights=row, minlength=n) for row in floored])
    return sums / np.maximum(pool.lengths, 1)


def batched_log_likelihoods(demonstrations: Sequence[Any], in_bag: np.ndarray, make_policy: Callable[[int], Any],
                            *, seed: int, batches: int, batch_size: int, learning_rate: float,
                            ent_weight: float = 1e-3, device: Any = "cpu", chunk_size: int = 4096,
                            min_log_prob: float = MIN_LOG_PROB) -> np.ndarray:
    """The ensemble's ``(K, N)`` member log-likelihoods (``EnsembleScores.log_likelihood``) from one batched fit:
    :func:`fit_members`, then :func:`member_log_likelihoods`. The ensemble calls it in place of its member loop
    where :func:`batch_reason` of its policy is ``None``.

    Raises:
        ValueError: as :func:`fit_members` and :func:`member_log_likelihoods`.
    """
    members, _ = fit_members(demonstrations, in_bag, make_policy, seed=seed, batches=batches, batch_size=batch_size,
                             learning_rate=learning_rate, ent_weight=ent_weight, device=device)
    return member_log_likelihoods(members, demonstrations, chunk_size=chunk_size, min_log_prob=min_log_prob)
