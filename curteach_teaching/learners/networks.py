"""The navigation learner: the original's residual CNN, as a Stable-Baselines3 policy that imitation's ``BC`` trains.

The original's network (docs/experiments/nav.md) maps a batch of observations ``(B, 7, 6, 6)`` to action
logits ``(B, 3)`` (0 move, 1 turn_left, 2 turn_right):

* ``conv0``: Conv2d(7 -> 32, k=3, pad=1) + ReLU;
* two residual blocks, each ``relu(h + x)`` with ``h = relu(c3(relu(c2(relu(c1(x))))))`` and three
  Conv2d(32 -> 32, k=3, pad=1); the skip is real and the add is out of place (the original's in-place
  ``out += residual`` fails on PyTorch >= 1.10, docs/deviations.md). The final ReLU is a no-op (both terms are
  >= 0) but is kept, as in the original;
* flatten (channel-major, 32 * 6 * 6 = 1152) -> Linear(1152 -> 512) + ReLU -> Linear(512 -> 256) + ReLU ->
  Dropout(0.2) -> Linear(256 -> 3).

779,971 parameters, PyTorch's default initialisation. Unlike ``nn.Conv2d``/``nn.Linear`` built the usual way, the
weights are drawn from a ``torch.Generator`` given by the caller (or seeded from the caller's seed): the layers are
built on the ``meta`` device (no draw at all) and then initialised with exactly PyTorch's default rule
(``kaiming_uniform_(a=sqrt(5))`` for weights, ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for biases), on the CPU, in
layer order, from that generator. Building a network therefore never touches torch's global RNG, and the same seed
gives the same weights on every device.

Dropout draws its masks from the network's own generator too (:class:`GeneratorDropout`), seeded from the
initialisation stream, so a training run is reproducible from one seed without ``torch.manual_seed``. It is active
in train mode and off in eval mode. Note: imitation's ``BC.train`` does not change the mode, and SB3's
``policy.predict`` leaves the policy in eval mode; put the policy in train mode (``policy.set_training_mode(True)``)
before training.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from torch import nn
from torch.nn import functional as F

from curteach_teaching.learners.logits_policy import LogitsPolicy
from curteach_teaching.learners.seeding import make_generator

__all__ = [
    "N_PARAMETERS",
    "OBSERVATION_SHAPE",
    "N_ACTIONS",
    "GeneratorDropout",
    "ResidualBlock",
    "NavigationCNN",
    "NavigationCNNPolicy",
    "navigation_spaces",
]

#: ``(C, H, W)`` of a navigation observation.
OBSERVATION_SHAPE = (7, 6, 6)
#: move, turn_left, turn_right.
N_ACTIONS = 3
#: Parameters of :class:`NavigationCNN` with the original's sizes (docs/experiments/nav.md).
N_PARAMETERS = 779_971
#: Learning rate of the original's plain SGD (docs/experiments/nav.md).
DEFAULT_LEARNING_RATE = 0.01
_CHANNELS = 32
_EMBEDDING = 512
_HIDDEN = 256


class GeneratorDropout(nn.Module):
    """``nn.Dropout(p)`` whose masks come from its own ``torch.Generator`` (not torch's global RNG).

    In train mode each element is zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``; in eval
    mode it is the identity. The generator lives on the device of the input: the first forward on a device creates
    that device's generator from ``seed`` (a device's stream starts over from ``seed``).

    Args:
        p: drop probability in ``[0, 1)``.
        seed: seed of the mask stream; ``None``: draw masks from torch's global RNG, like ``nn.Dropout``.
    """

    def __init__(self, p: float = 0.2, seed: int | None = None):
        super().__init__()
        if not (isinstance(p, (int, float)) and 0.0 <= float(p) < 1.0):
            raise ValueError(f"dropout probability must be in [0, 1); got {p!r}")
        self.p = float(p)
        self.seed = None if seed is None else int(seed)
        self._generators: dict[str, th.Generator] = {}

    def generator(self, device: str | th.device) -> th.Generator:
        """The mask generator on ``device`` (created from ``seed`` on first use); needs a ``seed``."""
        if self.seed is None:
            raise ValueError("this dropout has no seed; it draws from torch's global RNG")
        key = str(th.device(device))
        if key not in self._generators:
            generator = th.Generator(device=device)
            generator.manual_seed(self.seed)
            self._generators[key] = generator
        return self._generators[key]

    def get_rng_state(self) -> dict[str, th.Tensor]:
        """``{device: generator state}`` of every mask stream used so far (for checkpoints)."""
        return {key: g.get_state() for key, g in self._generators.items()}

    def set_rng_state(self, state: dict[str, th.Tensor]) -> None:
        """Restore the mask streams saved by :meth:`get_rng_state`."""
        for key, value in state.items():
            self.generator(key).set_state(value)

    def forward(self, x: th.Tensor) -> th.Tensor:
        """``(..., F)`` -> same shape; masked and rescaled in train mode, unchanged in eval mode."""
        if not self.training or self.p == 0.0:
            return x
        if self.seed is None:
            return F.dropout(x, self.p, training=True)
        keep = th.rand(x.shape, generator=self.generator(x.device), device=x.device, dtype=x.dtype) >= self.p
        return x * keep / (1.0 - self.p)

    def extra_repr(self) -> str:
        """``p`` and ``seed``, for ``repr``."""
        return f"p={self.p}, seed={self.seed}"


class ResidualBlock(nn.Module):
    """``relu(h + x)`` with ``h = relu(c3(relu(c2(relu(c1(x))))))``, three ``Conv2d(C -> C, 3, padding=1)``.

    ``(B, C, H, W)`` -> ``(B, C, H, W)``. The add is out of place, so autograd keeps the ReLU outputs it needs.
    """

    def __init__(self, channels: int = _CHANNELS, device: str | th.device | None = None):
        super().__init__()
        self.c1 = nn.Conv2d(channels, channels, 3, padding=1, device=device)
        self.c2 = nn.Conv2d(channels, channels, 3, padding=1, device=device)
        self.c3 = nn.Conv2d(channels, channels, 3, padding=1, device=device)

    def branch(self, x: th.Tensor) -> th.Tensor:
        """The residual branch ``h = f(x)``."""
        # In-place ReLUs act on fresh convolution outputs, which no backward pass needs (saves ~20% of CPU time).
        h = F.relu(self.c1(x), inplace=True)
        h = F.relu(self.c2(h), inplace=True)
        return F.relu(self.c3(h), inplace=True)

    def forward(self, x: th.Tensor) -> th.Tensor:
        """``relu(f(x) + x)``, with an out-of-place add (``x`` is left as it is)."""
        return F.relu(self.branch(x) + x)


class NavigationCNN(nn.Module):
    """The original's CNN: ``(B, 7, 6, 6)`` observations -> ``(B, 3)`` action logits (see the module docstring).

    Args:
        in_channels: observation channels (7 for both tasks).
        dropout: drop probability before the last layer (the original: 0.2).
        seed: an integer seed or a CPU ``torch.Generator`` for the initial weights and the dropout masks;
            ``None``: fresh OS entropy (not reproducible). Torch's global RNG is never used.
        device: where the parameters live (default CPU); the weights are drawn on the CPU first, so a seed gives the
            same weights on every device.

    Attributes:
        dropout_seed: the seed of the dropout masks, the first draw from the generator after the weights.
    """

    def __init__(
        self,
        in_channels: int = OBSERVATION_SHAPE[0],
        *,
        dropout: float = 0.2,
        seed: int | th.Generator | None = None,
        device: str | th.device | None = None,
    ):
        super().__init__()
        if isinstance(in_channels, bool) or not isinstance(in_channels, (int, np.integer)) or in_channels < 1:
            raise ValueError(f"in_channels must be a positive integer; got {in_channels!r}")
        generator = make_generator(seed)
        meta = th.device("meta")  # no parameter is drawn here; reset_parameters draws them all
        self.in_channels = int(in_channels)
        self.conv0 = nn.Conv2d(self.in_channels, _CHANNELS, 3, padding=1, device=meta)
        self.block1 = ResidualBlock(_CHANNELS, device=meta)
        self.block2 = ResidualBlock(_CHANNELS, device=meta)
        self.fc1 = nn.Linear(_CHANNELS * OBSERVATION_SHAPE[1] * OBSERVATION_SHAPE[2], _EMBEDDING, device=meta)
        self.fc2 = nn.Linear(_EMBEDDING, _HIDDEN, device=meta)
        self.head = nn.Linear(_HIDDEN, N_ACTIONS, device=meta)
        self.to_empty(device="cpu")
        self.reset_parameters(generator)
        self.dropout_seed = int(th.randint(0, 2**62, (1,), generator=generator).item())
        self.dropout = GeneratorDropout(dropout, seed=self.dropout_seed)
        if device is not None:
            self.to(device)

    def layers(self) -> tuple[nn.Module, ...]:
        """The 7 convolutions and 3 linear layers in forward order (the order of initialisation)."""
        b1, b2 = self.block1, self.block2
        return (self.conv0, b1.c1, b1.c2, b1.c3, b2.c1, b2.c2, b2.c3, self.fc1, self.fc2, self.head)

    def reset_parameters(self, seed: int | th.Generator | None = None) -> None:
        """Redraw every weight and bias with PyTorch's default rule from ``seed`` (a generator is advanced).

        Layer by layer in forward order, weight then bias, as ``nn.Conv2d``/``nn.Linear`` do in their
        ``reset_parameters``: weight ``kaiming_uniform_(a=sqrt(5))``, bias ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
        The draws happen on the CPU and are copied to the parameters' device.
        """
        generator = make_generator(seed)
        with th.no_grad():
            for layer in self.layers():
                weight = th.empty(layer.weight.shape, dtype=layer.weight.dtype)
                nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
                layer.weight.copy_(weight)
                if layer.bias is not None:
                    fan_in, _ = nn.init._calculate_fan_in_and_fan_out(weight)
                    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                    bias = th.empty(layer.bias.shape, dtype=layer.bias.dtype)
                    nn.init.uniform_(bias, -bound, bound, generator=generator)
                    layer.bias.copy_(bias)

    def features(self, x: th.Tensor) -> th.Tensor:
        """``(B, 7, 6, 6)`` -> ``(B, 1152)``, the flattened output of the residual tower (channel-major)."""
        if x.ndim != 4 or tuple(x.shape[1:]) != (self.in_channels,) + OBSERVATION_SHAPE[1:]:
            expected = (self.in_channels,) + OBSERVATION_SHAPE[1:]
            raise ValueError(f"observations must have shape (B, {', '.join(map(str, expected))}); got {tuple(x.shape)}")
        # channels_last makes the 6 x 6 convolutions 2-3x faster on CPU (oneDNN); same function up to float rounding
        x = x.contiguous(memory_format=th.channels_last)
        h = F.relu(self.conv0(x), inplace=True)
        h = self.block2(self.block1(h))
        return th.flatten(h, 1)

    def embedding(self, x: th.Tensor) -> th.Tensor:
        """``(B, 7, 6, 6)`` -> ``(B, 512)``, the original's task embedding (after ``fc1`` and its ReLU)."""
        return F.relu(self.fc1(self.features(x)), inplace=True)

    def forward(self, x: th.Tensor) -> th.Tensor:
        """``(B, 7, 6, 6)`` float observations -> ``(B, 3)`` logits."""
        h = F.relu(self.fc2(self.embedding(x)), inplace=True)
        return self.head(self.dropout(h))


def navigation_spaces() -> tuple[gym.spaces.Box, gym.spaces.Discrete]:
    """The observation and action spaces of ``ShortestPathTeach-v0`` and ``TSPTeach-v0``:
    ``Box(0, 1, (7, 6, 6), float32)`` and ``Discrete(3)``."""
    return gym.spaces.Box(0.0, 1.0, shape=OBSERVATION_SHAPE, dtype=np.float32), gym.spaces.Discrete(N_ACTIONS)


def _constant_learning_rate(_: float) -> float:
    return DEFAULT_LEARNING_RATE


class NavigationCNNPolicy(LogitsPolicy):
    """:class:`NavigationCNN` as an SB3 policy (:class:`~curteach_teaching.learners.logits_policy.LogitsPolicy`),
    the ``policy`` of ``imitation.algorithms.bc.BC``.

    ``pi(. | s) = softmax(logits(s))`` (a ``Categorical`` over the 3 actions). ``evaluate_actions(obs, actions)``
    returns ``(values, log pi(a | s), entropy)``, which is what BC's loss reads. There is no value function: the
    value output is always zeros ``(B, 1)`` and nothing trains it (BC never reads it). Greedy actions
    (``predict(obs, deterministic=True)``) are the argmax of the logits, the first on ties; sampled actions
    (``deterministic=False``) draw from torch's global RNG, as every SB3 policy does.

    Args:
        observation_space: ``Box(0, 1, (7, 6, 6), float32)``, the environments' (see :func:`navigation_spaces`).
        action_space: ``Discrete(3)``.
        lr_schedule: SB3's schedule for ``policy.optimizer`` (imitation's BC builds its own optimizer and ignores
            this one); default the original's constant 0.01.
        seed: integer seed or CPU ``torch.Generator`` for the weights and the dropout masks (see
            :class:`NavigationCNN`); ``None``: OS entropy.
        dropout: drop probability before the last layer (0.2).
        device: ``"cpu"``, ``"cuda"``, ... or ``None`` (CPU).
        optimizer_class, optimizer_kwargs: SB3's ``policy.optimizer`` (default plain SGD, as the original).

    Raises:
        ValueError: spaces other than the navigation spaces.
    """

    def __init__(
        self,
        observation_space: gym.spaces.Space,
        action_space: gym.spaces.Space,
        lr_schedule: Callable[[float], float] = _constant_learning_rate,
        *,
        seed: int | th.Generator | None = None,
        dropout: float = 0.2,
        device: str | th.device | None = None,
        optimizer_class: type[th.optim.Optimizer] = th.optim.SGD,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        if not (isinstance(observation_space, gym.spaces.Box) and observation_space.shape[1:] == OBSERVATION_SHAPE[1:]
                and len(observation_space.shape) == 3):
            raise ValueError(f"observation_space must be a Box of shape (C, 6, 6), e.g. {navigation_spaces()[0]}; "
                             f"got {observation_space}")
        if not isinstance(action_space, gym.spaces.Discrete) or action_space.n != N_ACTIONS:
            raise ValueError(f"action_space must be Discrete({N_ACTIONS}); got {action_space}")
        super().__init__(observation_space, action_space, lr_schedule, optimizer_class=optimizer_class,
                         optimizer_kwargs=optimizer_kwargs)
        self.dropout_p = float(dropout)
        self.net = NavigationCNN(observation_space.shape[0], dropout=dropout, seed=seed)
        self.make_optimizer(lr_schedule)
        if device is not None:
            self.to(device)

    @classmethod
    def for_navigation(cls, **kwargs: Any) -> NavigationCNNPolicy:
        """The policy for the navigation environments' spaces (:func:`navigation_spaces`)."""
        observation_space, action_space = navigation_spaces()
        return cls(observation_space, action_space, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        # The weights come from the saved state_dict; seed=0 only avoids spending OS entropy on a load.
        return dict(super()._get_constructor_parameters(), lr_schedule=_constant_learning_rate, seed=0,
                    dropout=self.dropout_p)

    def get_rng_state(self) -> dict[str, th.Tensor]:
        """The dropout masks' generator states (:meth:`GeneratorDropout.get_rng_state`), for checkpoints."""
        return self.net.dropout.get_rng_state()

    def set_rng_state(self, state: dict[str, th.Tensor]) -> None:
        """Restore :meth:`get_rng_state`."""
        self.net.dropout.set_rng_state(state)

    def _obs(self, obs: Any) -> th.Tensor:
        """``(B, 7, 6, 6)`` float32 tensor on the policy's device from an array/tensor (one ``(7, 6, 6)`` too)."""
        x = th.as_tensor(obs, device=self.device, dtype=th.float32)
        if x.ndim == len(OBSERVATION_SHAPE):
            x = x.unsqueeze(0)
        return x

    def n_observations(self, obs: Any) -> int:
        """B, the observations in ``obs``."""
        return int(self._obs(obs).shape[0])

    def action_logits(self, obs: Any) -> th.Tensor:
        """``(B, 3)`` logits of ``(B, 7, 6, 6)`` observations (differentiable; dropout as the mode says)."""
        return self.net(self._obs(obs))

    def _predict(self, observation: th.Tensor, deterministic: bool = False) -> th.Tensor:
        if deterministic:
            return self.action_logits(observation).argmax(dim=-1)
        return self.get_distribution(observation).get_actions(deterministic=False)
