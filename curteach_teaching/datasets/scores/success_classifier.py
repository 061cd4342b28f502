"""Demo-SCORE's classifier step (Chen et al., 2025, arXiv 2503.03707): a small network told the states of successful
rollouts from those of failed ones, its training epoch chosen on the rollouts of a held-out checkpoint.

:func:`fit_success_classifier` trains a one-hidden-layer MLP ``D -> H (ReLU) -> 1`` on states ``(n, D)`` each
labelled by its rollout's outcome (1 success, 0 failure), inputs standardised by the training states' mean and
standard deviation (a column that does not vary is left centred), with Adam and the mean binary cross-entropy, in
shuffled minibatches (a ``torch.Generator`` seeded by ``seed`` draws the initial weights and the order). After every
epoch it measures the mean per-state binary cross-entropy on the held-out checkpoint's states, and keeps the weights of
the epoch where that loss is lowest (the first on ties): the authors' selection (``select_ep_ckpt_val_loss_min``,
the minimum over epochs of the held-out checkpoint's stepwise BCE). The result predicts ``P(success | state)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from curteach_envs._util import check_int

__all__ = ["SuccessClassifier", "fit_success_classifier"]


@dataclass(frozen=True)
class SuccessClassifier:
    """The chosen classifier.

    Attributes:
        network: the torch module on standardised inputs (logits ``(n, 1)``); mean, scale: ``(D,)`` the
            standardisation; epoch: the chosen epoch, 1-based; held_out_losses: ``(E,)`` the held-out mean BCE after
            each epoch.
    """

    network: object
    mean: np.ndarray
    scale: np.ndarray
    epoch: int
    held_out_losses: np.ndarray

    def predict(self, states: np.ndarray, chunk: int = 65536) -> np.ndarray:
        """``(n,)`` float64 ``P(success)`` of ``states`` ``(n, D)``."""
        import torch

        states = (np.asarray(states, dtype=np.float64) - self.mean) / self.scale
        out = []
        with torch.no_grad():
            for start in range(0, len(states), chunk):
                logits = self.network(torch.as_tensor(states[start:start + chunk], dtype=torch.float32))
                out.append(torch.sigmoid(logits[:, 0]).double().numpy())
        return np.concatenate(out) if out else np.zeros(0)


def _bce(network, x, y) -> float:
    import torch

    with torch.no_grad():
        return float(torch.nn.functional.binary_cross_entropy_with_logits(network(x)[:, 0], y))


def fit_success_classifier(train_states: np.ndarray, train_labels: np.ndarray, held_states: np.ndarray,
                           held_labels: np.ndarray, *, hidden: int = 32, epochs: int = 50, seed: int = 0,
                           learning_rate: float = 1e-3, batch_size: int = 256) -> SuccessClassifier:
    """The classifier of the module docstring.

    Args:
        train_states: ``(n, D)`` float states of the training checkpoints' rollouts; train_labels: ``(n,)`` 0/1.
        held_states: ``(m, D)`` those of the held-out checkpoint's rollouts; held_labels: ``(m,)`` 0/1.
        hidden: ``H``; epochs: ``E`` passes over the training states; seed: the generator's.

    Raises:
        ValueError: training labels of one class only (nothing to tell apart), no held-out state, or bad sizes.
    """
    import torch

    check_int("hidden", hidden, 1)
    check_int("epochs", epochs, 1)
    x = np.asarray(train_states, dtype=np.float64)
    y = np.asarray(train_labels, dtype=np.float64)
    if x.ndim != 2 or y.shape != (len(x),) or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"train_states must be (n, D) and train_labels (n,) of 0 and 1; got {x.shape}, {y.shape}")
    positives = int(y.sum())
    if positives in (0, len(y)):
        raise ValueError(f"the classifier needs states of both outcomes; the training states are {positives} of "
                         f"successes and {len(y) - positives} of failures")
    held_x, held_y = np.asarray(held_states, dtype=np.float64), np.asarray(held_labels, dtype=np.float64)
    if held_x.ndim != 2 or held_x.shape[1] != x.shape[1] or held_y.shape != (len(held_x),) or not len(held_x):
        raise ValueError(f"held_states must be (m >= 1, {x.shape[1]}) with (m,) labels; got {held_x.shape}, "
                         f"{held_y.shape}")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)  # a constant column: centred, not divided by zero
    generator = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):  # the layers' initialisation draws from the global CPU stream: isolated
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
        network = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
    inputs = torch.as_tensor((x - mean) / scale, dtype=torch.float32)
    targets = torch.as_tensor(y, dtype=torch.float32)
    held_inputs = torch.as_tensor((held_x - mean) / scale, dtype=torch.float32)
    held_targets = torch.as_tensor(held_y, dtype=torch.float32)
    optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate)
    losses, best, best_state = [], None, None
    for _ in range(epochs):
        order = torch.randperm(len(inputs), generator=generator)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(network(inputs[rows])[:, 0], targets[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        losses.append(_bce(network, held_inputs, held_targets))
        if best is None or losses[-1] < best:
            best = losses[-1]
            best_state = {k: v.detach().clone() for k, v in network.state_dict().items()}
    network.load_state_dict(best_state)
    network.eval()
    return SuccessClassifier(network=network, mean=mean, scale=scale, epoch=int(np.argmin(losses)) + 1,
                             held_out_losses=np.asarray(losses))

