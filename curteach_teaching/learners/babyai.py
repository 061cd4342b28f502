"""A multi-task BabyAI policy: a small CNN over the egocentric view, conditioned on the mission by FiLM.

The network (:class:`BabyAIFiLMNet`, about 230k parameters at the default sizes) maps the policy's observations
(:func:`~curteach_teaching.learners.babyai_vocab.policy_observation_space`) to 7 action logits:

* **image** ``(B, 7, 7, 3)`` of (object type, colour, state) indices: each channel's index picks a row of one
  embedding table (16 rows per channel, 64 dimensions) and the three rows are summed, giving ``(B, 64, 7, 7)``;
* **mission** ``(B, L)`` token ids: word embeddings (32 dimensions) read by a one-layer GRU (128 units), whose last
  hidden state (at the mission's last word; padding is packed away) is the mission encoding ``(B, 128)``;
* two 3x3 convolutions (64 channels, padding 1), each followed by **FiLM**: ``h <- relu(conv(h) * gamma + beta)``
  with ``(gamma, beta)`` ``(B, 64)`` each, a linear function of the mission encoding (one per layer);
* max-pool over the 7x7 cells ``(B, 64)``, concatenated with the direction one-hot ``(B, 4)`` and the mission
  encoding; MLP ``Linear(196 -> 256)``, ReLU, ``Linear(256 -> 7)``.

What the BabyAI papers used, and where this differs:

* BabyAI (Chevalier-Boisvert et al., ICLR 2019) encodes the 7x7 view with convolutions and the instruction with a
  GRU, conditions the convolutions on it by FiLM (Perez et al., 2018), and adds an LSTM memory before the actor and
  critic heads. BabyAI 1.1 (Hui et al., 2020) replaces the image convolution's first layer by exactly this summed
  "bag of words" embedding of the cell indices, uses 128 channels, batch normalisation and residual connections in
  its FiLM blocks, a pooled 128-d image encoding and a 128-d LSTM memory; imitation learning with that model solves
  every level of the ladder given enough demonstrations.
* Here: **no memory** (no LSTM: the policy sees one observation; imitation's ``BC`` trains on independent
  transitions, and the levels used here are single-room), so a greedy policy can loop where a recurrent one would
  not; 64 channels instead of 128; no batch normalisation (imitation's ``BC`` never switches train/eval mode, and
  batch statistics would make a policy's action depend on its batch); the direction is an explicit one-hot input and
  the mission encoding also reaches the MLP. The FiLM scale is ``gamma`` itself, as in the papers: a scale of
  ``1 + gamma`` (the identity at initialisation) was tried and learned PutNextLocal worse (greedy success 31 and 14 %
  against 40 and 39 % for two policy seeds at 2,800 BC steps; docs/experiments/babyai.md).

Weights are drawn from a ``torch.Generator`` (or a seed), layer by layer, with PyTorch's default rule for each layer
type (see :meth:`BabyAIFiLMNet.reset_parameters`); building a policy never reads or changes torch's global RNG.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from torch import nn
from torch.nn import functional as F

from curteach_teaching.learners.babyai_vocab import (
    IMAGE_SHAPE,
    N_ACTIONS,
    N_DIRECTIONS,
    PAD_ID,
    VOCABULARY,
    policy_observation_space,
)
from curteach_teaching.learners.logits_policy import LogitsPolicy
from curteach_teaching.learners.seeding import make_generator

__all__ = ["BabyAIFiLMNet", "BabyAIFiLMPolicy", "DEFAULT_LEARNING_RATE", "INDEX_ROWS"]

#: Embedding rows per image channel (Minigrid uses object types 0-10, colours 0-5, states 0-2).
INDEX_ROWS = 16
#: Adam's learning rate in the measurements of docs/experiments/babyai.md.
DEFAULT_LEARNING_RATE = 1e-3


class BabyAIFiLMNet(nn.Module):
    """Image, direction and mission token ids -> ``(B, 7)`` action logits (see the module docstring).

    Args:
        channels: image embedding and convolution channels (64).
        word_dim: word embedding size (32).
        mission_dim: GRU units, the size of the mission encoding (128).
        hidden: units of the MLP's hidden layer (256).
        vocabulary_size: rows of the word embedding (``len(VOCABULARY)``).
        seed: an integer seed or a CPU ``torch.Generator`` for the initial weights; ``None``: OS entropy.
    """

    def __init__(
        self,
        *,
        channels: int = 64,
        word_dim: int = 32,
        mission_dim: int = 128,
        hidden: int = 256,
        vocabulary_size: int = len(VOCABULARY),
        seed: int | th.Generator | None = None,
    ):
        super().__init__()
        sizes = dict(channels=channels, word_dim=word_dim, mission_dim=mission_dim, hidden=hidden,
                     vocabulary_size=vocabulary_size)
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        self.sizes = {name: int(value) for name, value in sizes.items()}
        meta = th.device("meta")  # nothing is drawn here; reset_parameters draws every weight from the generator
        n_channels = IMAGE_SHAPE[2]
        self.cell_embedding = nn.Embedding(n_channels * INDEX_ROWS, channels, device=meta)
        self.word_embedding = nn.Embedding(vocabulary_size, word_dim, padding_idx=PAD_ID, device=meta)
        self.gru = nn.GRU(word_dim, mission_dim, batch_first=True, device=meta)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, device=meta)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, device=meta)
        self.film1 = nn.Linear(mission_dim, 2 * channels, device=meta)
        self.film2 = nn.Linear(mission_dim, 2 * channels, device=meta)
        self.fc = nn.Linear(channels + N_DIRECTIONS + mission_dim, hidden, device=meta)
        self.head = nn.Linear(hidden, N_ACTIONS, device=meta)
        self.to_empty(device="cpu")
        self.register_buffer("channel_offsets", th.arange(n_channels, dtype=th.long) * INDEX_ROWS, persistent=False)
        self.reset_parameters(make_generator(seed))

    def reset_parameters(self, seed: int | th.Generator | None = None) -> None:
        """Redraw every parameter from ``seed`` (a generator is advanced), module by module in definition order.

        PyTorch's default rule per layer type: ``Embedding`` ``N(0, 1)`` (the padding row zero); ``GRU``
        ``U(-1/sqrt(units), 1/sqrt(units))``; ``Conv2d``/``Linear`` weight ``kaiming_uniform_(a=sqrt(5))`` and bias
        ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``. Draws happen on the CPU and are copied to the parameters' device.
        """
        generator = make_generator(seed)

        def draw(parameter: th.Tensor, fill: Callable[[th.Tensor], Any]) -> None:
            values = th.empty(parameter.shape, dtype=parameter.dtype)
            fill(values)
            parameter.copy_(values)

        with th.no_grad():
            for module in self.children():
                if isinstance(module, nn.Embedding):
                    draw(module.weight, lambda t: nn.init.normal_(t, generator=generator))
                    if module.padding_idx is not None:
                        module.weight[module.padding_idx].zero_()
                elif isinstance(module, nn.GRU):
                    bound = 1.0 / math.sqrt(module.hidden_size)
                    for parameter in module.parameters():
                        draw(parameter, lambda t, b=bound: nn.init.uniform_(t, -b, b, generator=generator))
                elif isinstance(module, (nn.Conv2d, nn.Linear)):
                    draw(module.weight, lambda t: nn.init.kaiming_uniform_(t, a=math.sqrt(5), generator=generator))
                    fan_in = module.weight[0].numel()
                    bound = 1.0 / math.sqrt(fan_in)
                    draw(module.bias, lambda t, b=bound: nn.init.uniform_(t, -b, b, generator=generator))

    def encode_mission(self, mission: th.Tensor) -> th.Tensor:
        """``(B, L)`` token ids (padded with ``PAD_ID`` after the last word) -> ``(B, mission_dim)``.

        The GRU runs only over each mission's words (a packed sequence), so padding never changes the encoding. An
        all-padding row reads one padding token.
        """
        lengths = (mission != PAD_ID).sum(dim=1).clamp(min=1)
        longest = int(lengths.max())
        words = self.word_embedding(mission[:, :longest])
        packed = nn.utils.rnn.pack_padded_sequence(words, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, last = self.gru(packed)
        return last[0]

    def forward(self, image: th.Tensor, direction: th.Tensor, mission: th.Tensor) -> th.Tensor:
        """``image (B, 7, 7, 3)`` indices, ``direction (B,)`` in 0..3 (or its one-hot ``(B, 4)``), ``mission (B, L)``
        token ids -> ``(B, 7)`` logits."""
        cells = self.cell_embedding(image.long() + self.channel_offsets).sum(dim=3)  # (B, 7, 7, C)
        h = cells.permute(0, 3, 1, 2)  # (B, C, 7, 7)
        encoded = self.encode_mission(mission.long())
        for conv, film in ((self.conv1, self.film1), (self.conv2, self.film2)):
            gamma, beta = film(encoded)[:, :, None, None].chunk(2, dim=1)
            h = F.relu(conv(h) * gamma + beta)
        pooled = h.amax(dim=(2, 3))
        if direction.ndim == 1:
            direction = F.one_hot(direction.long(), N_DIRECTIONS)
        features = th.cat([pooled, direction.to(pooled.dtype), encoded], dim=1)
        return self.head(F.relu(self.fc(features)))


def _constant_learning_rate(_: float) -> float:
    return DEFAULT_LEARNING_RATE


class BabyAIFiLMPolicy(LogitsPolicy):
    """:class:`BabyAIFiLMNet` as an SB3 policy (:class:`~curteach_teaching.learners.logits_policy.LogitsPolicy`), the
    ``policy`` of ``imitation.algorithms.bc.BC``.

    Observations are the policy's (missions already token ids; see
    :mod:`curteach_teaching.learners.babyai_vocab`): a dict with ``image (B, 7, 7, 3)``, ``direction (B,)`` and
    ``mission (B, L)``, as tensors (what BC hands over) or arrays (``predict``). ``evaluate_actions`` returns
    ``(zeros (B, 1), log pi(a | s) (B,), entropy (B,))``; there is no value function. Greedy actions are the argmax
    of the logits; ``predict(deterministic=False)`` samples from torch's global RNG, as every SB3 policy does (the
    evaluator in :mod:`curteach_teaching.rollouts` samples from its own generator instead).

    Args:
        observation_space: :func:`~curteach_teaching.learners.babyai_vocab.policy_observation_space` (any token width).
        action_space: ``Discrete(7)``.
        lr_schedule: SB3's schedule for ``policy.optimizer`` (imitation's BC builds its own optimizer).
        seed: integer seed or CPU ``torch.Generator`` for the weights; ``None``: OS entropy.
        net_kwargs: sizes of :class:`BabyAIFiLMNet` (``channels``, ``word_dim``, ``mission_dim``, ``hidden``).
        device: ``"cpu"``, ``"cuda"``, ... or ``None`` (CPU).
        optimizer_class, optimizer_kwargs: SB3's ``policy.optimizer`` (default Adam).

    Raises:
        ValueError: other spaces.
    """

    def __init__(
        self,
        observation_space: gym.spaces.Space,
        action_space: gym.spaces.Space,
        lr_schedule: Callable[[float], float] = _constant_learning_rate,
        *,
        seed: int | th.Generator | None = None,
        net_kwargs: Mapping[str, int] | None = None,
        device: str | th.device | None = None,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        if not self.accepts(observation_space):
            raise ValueError(f"observation_space must be like {policy_observation_space()}; got {observation_space}")
        if not isinstance(action_space, gym.spaces.Discrete) or action_space.n != N_ACTIONS:
            raise ValueError(f"action_space must be Discrete({N_ACTIONS}); got {action_space}")
        super().__init__(observation_space, action_space, lr_schedule, optimizer_class=optimizer_class,
                         optimizer_kwargs=optimizer_kwargs)
        self.net_kwargs = dict(net_kwargs or {})
        self.net = BabyAIFiLMNet(seed=seed, **self.net_kwargs)
        self.make_optimizer(lr_schedule)
        if device is not None:
            self.to(device)

    @staticmethod
    def accepts(observation_space: gym.spaces.Space) -> bool:
        """Whether ``observation_space`` is the policy's: a ``Dict`` of ``image`` ``(7, 7, 3)``, ``direction`` and a
        1-D ``mission`` of token ids (:func:`~curteach_teaching.learners.babyai_vocab.policy_observation_space`, any
        token width)."""
        return (isinstance(observation_space, gym.spaces.Dict)
                and set(observation_space.spaces) == set(policy_observation_space().spaces)
                and observation_space["image"].shape == IMAGE_SHAPE
                and len(observation_space["mission"].shape) == 1)

    @classmethod
    def for_babyai(cls, **kwargs: Any) -> BabyAIFiLMPolicy:
        """The policy for :func:`~curteach_teaching.learners.babyai_vocab.policy_observation_space` and
        ``Discrete(7)``."""
        return cls(policy_observation_space(), gym.spaces.Discrete(N_ACTIONS), **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        # The weights come from the saved state_dict; seed=0 only avoids spending OS entropy on a load.
        return dict(super()._get_constructor_parameters(), lr_schedule=_constant_learning_rate, seed=0,
                    net_kwargs=self.net_kwargs)

    def _tensors(self, obs: Mapping[str, Any]) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``(image (B, 7, 7, 3), direction (B,), mission (B, L))`` on the policy's device; one unbatched
        observation gains a batch axis."""
        if not isinstance(obs, Mapping):
            raise ValueError(f"BabyAI observations are a dict with image, direction, mission; got {type(obs).__name__}")
        image = th.as_tensor(obs["image"], device=self.device)
        direction = th.as_tensor(obs["direction"], device=self.device)
        mission = th.as_tensor(obs["mission"], device=self.device)
        if image.ndim == len(IMAGE_SHAPE):
            image, direction, mission = image[None], direction.reshape(1), mission[None]
        return image, direction, mission

    def n_observations(self, obs: Mapping[str, Any]) -> int:
        """B, the observations in ``obs``."""
        return int(self._tensors(obs)[0].shape[0])

    def action_logits(self, obs: Mapping[str, Any]) -> th.Tensor:
        """``(B, 7)`` logits of a batch of policy observations (differentiable)."""
        return self.net(*self._tensors(obs))

    def _predict(self, observation: Mapping[str, Any], deterministic: bool = False) -> th.Tensor:
        if deterministic:
            return self.action_logits(observation).argmax(dim=-1)
        return self.get_distribution(observation).get_actions(deterministic=False)
