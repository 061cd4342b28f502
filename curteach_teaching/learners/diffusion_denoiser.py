"""The network of the diffusion learner: a conditional MLP that predicts the noise added to an action.

``epsilon(a_t, t, s)``: the noised action ``a_t`` ``(B, D)``, a sinusoidal embedding of the diffusion timestep ``t``
``(B,)`` and the observation ``s`` ``(B, S)`` are concatenated at the input of an MLP (Mish activations) whose
output ``(B, D)`` is the predicted noise. Conditioning by concatenation, not FiLM as LeRobot's 1-D U-Net does: the
learner denoises one action of a few dimensions, so a plain MLP over the three parts is enough (docs/
learners-diffusion.md).

The weights are drawn from a ``torch.Generator`` seeded by the caller, never from torch's global generator, with the
distributions ``nn.Linear`` uses by default (Kaiming-uniform weights, uniform biases in ``+-1/sqrt(fan_in)``), on
the CPU, so that one seed gives the same weights whatever the device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["Denoiser", "timestep_embedding"]


def timestep_embedding(timesteps: torch.Tensor, dim: int) -> torch.Tensor:
    """``(B, dim)`` the sinusoidal embedding of integer timesteps ``(B,)``: ``sin`` then ``cos`` of ``t * f_i`` at
    ``dim // 2`` frequencies ``f_i`` spaced geometrically from 1 down to 1/10000 (the Transformer's positions).

    Args:
        timesteps: ``(B,)`` integer (or float) diffusion timesteps.
        dim: an even embedding width.
    """
    half = dim // 2
    exponents = torch.arange(half, dtype=torch.float32, device=timesteps.device) / max(half - 1, 1)
    frequencies = torch.exp(-math.log(10000.0) * exponents)
    angles = timesteps.to(torch.float32)[:, None] * frequencies[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class Denoiser(nn.Module):
    """``epsilon(a_t, t, s)``: a concatenation-conditioned MLP (see the module docstring).

    Args:
        action_dim: ``D``; observation_dim: ``S``.
        hidden_sizes: the widths of the hidden layers.
        embedding_dim: the width of the timestep's sinusoidal embedding (even).
        generator: the CPU ``torch.Generator`` the initial weights are drawn from.
    """

    def __init__(self, action_dim: int, observation_dim: int, hidden_sizes: Sequence[int], embedding_dim: int,
                 generator: torch.Generator):
        super().__init__()
        if embedding_dim % 2:
            raise ValueError(f"the timestep embedding's width must be even; got {embedding_dim}")
        self.embedding_dim = embedding_dim
        widths = [action_dim + embedding_dim + observation_dim, *hidden_sizes, action_dim]
        layers: list[nn.Module] = []
        for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            # built on the meta device, so that building draws nothing from torch's global generator
            linear = nn.Linear(fan_in, fan_out, device="meta").to_empty(device="cpu")
            with torch.no_grad():
                nn.init.kaiming_uniform_(linear.weight, a=math.sqrt(5), generator=generator)
                bound = 1.0 / math.sqrt(fan_in)
                linear.bias.uniform_(-bound, bound, generator=generator)
            layers.append(linear)
            if i < len(widths) - 2:
                layers.append(nn.Mish())
        self.mlp = nn.Sequential(*layers)

    def forward(self, noisy_actions: torch.Tensor, timesteps: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """``(B, D)`` the predicted noise of ``noisy_actions`` ``(B, D)`` at ``timesteps`` ``(B,)`` given
        ``observations`` ``(B, S)``."""
        embedding = timestep_embedding(timesteps, self.embedding_dim)
        return self.mlp(torch.cat([noisy_actions, embedding, observations], dim=1))
