"""Look at what a trained navigation learner does: its greedy rollout on one task, as pictures.

The rollout is played in the task's own Gymnasium environment (``ShortestPathTeach-v0`` / ``TSPTeach-v0``), one
greedy action (argmax of the logits) per step, and each frame is the environment's ``rgb_array`` rendering.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["draw_rollout", "greedy_frames", "load_policy"]

_ENV_IDS = {"shortest_path": "ShortestPathTeach-v0", "tsp": "TSPTeach-v0"}


def load_policy(path: str | Path, device: str = "cpu"):
    """A :class:`~curteach_teaching.learners.networks.NavigationCNNPolicy` with the weights of a ``.pt`` file
    written by ``curteach nav`` (a ``state_dict``), in eval mode.

    Raises:
        ValueError: the file is missing or not such a ``state_dict``.
    """
    import torch as th

    from curteach_teaching.learners.networks import NavigationCNNPolicy

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no model file at {str(path)!r}")
    what = "a run's model written by curteach nav (DIR/runs/<curriculum>/run_XXXXX.model.pt)"
    try:
        state = th.load(path, map_location=device, weights_only=True)
    except Exception:  # torch's errors for a foreign file say nothing useful (e.g. "KeyError: 101")
        raise ValueError(f"{str(path)!r} is not a torch file, or a damaged one; --model takes {what}") from None
    if not isinstance(state, dict) or not all(isinstance(value, th.Tensor) for value in state.values()):
        raise ValueError(f"{str(path)!r} holds a {type(state).__name__}, not a network's weights; --model takes {what}")
    policy = NavigationCNNPolicy.for_navigation(seed=0, device=device)
    expected = policy.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    resized = sorted(name for name in set(expected) & set(state) if expected[name].shape != state[name].shape)
    if missing or unexpected or resized:
        parts = [f"{label}: {', '.join(names[:3])}{', ...' if len(names) > 3 else ''}"
                 for label, names in (("missing", missing), ("unexpected", unexpected), ("other shapes", resized))
                 if names]
        raise ValueError(f"{str(path)!r} holds the weights of another network ({'; '.join(parts)}); --model takes "
                         f"{what}")
    policy.load_state_dict(state)
    policy.set_training_mode(False)
    return policy


def greedy_frames(policy, task) -> tuple[list, float]:
    """Roll out ``policy`` greedily on ``task`` in its environment.

    Returns:
        ``(frames, total)``: the ``(H, W, 3)`` uint8 pictures before the first and after every action, and the
        return.
    """
    import gymnasium as gym
    import torch as th

    import curteach_envs  # noqa: F401  (registers the environments)

    kind = "tsp" if type(task).__name__ == "TSPTask" else "shortest_path"
    env = gym.make(_ENV_IDS[kind], render_mode="rgb_array")
    obs, _ = env.reset(options={"task": task})
    frames, total, done = [env.render()], 0.0, False
    while not done:
        with th.no_grad():
            logits = policy.action_logits(th.as_tensor(obs[None], dtype=th.float32, device=policy.device))
        action = int(th.argmax(logits, dim=1)[0])
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        frames.append(env.render())
        done = terminated or truncated
    env.close()
    return frames, total


def _legend_band(width: int):
    """A PIL image ``width`` pixels wide naming every colour of the frames (for the animation)."""
    from PIL import Image, ImageDraw

    from curteach_envs.navigation.render import NAV_COLOR_LEGEND

    line, swatch = 13, 9
    band = Image.new("RGB", (width, line * len(NAV_COLOR_LEGEND) + 4), (255, 255, 255))
    draw = ImageDraw.Draw(band)
    for row, (label, color) in enumerate(NAV_COLOR_LEGEND):
        top = 2 + row * line
        draw.rectangle([3, top + 1, 3 + swatch, top + 1 + swatch], fill=tuple(color), outline=(120, 120, 120))
        draw.text((3 + swatch + 4, top), label, fill=(0, 0, 0))
    return band


def draw_rollout(policy, split, index: int, out: str | Path) -> float:
    """Draw the greedy rollout on datapoint ``index`` of ``split`` into ``out`` (``.png``: a strip of frames;
    ``.gif``: an animation), each with a legend of the colours; return its return."""
    out = Path(out)
    frames, total = greedy_frames(policy, split.task(index))
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".gif":
        from PIL import Image

        band = _legend_band(np.asarray(frames[0]).shape[1])
        images = []
        for frame in frames:
            picture = Image.fromarray(np.asarray(frame))
            image = Image.new("RGB", (picture.width, picture.height + band.height), (255, 255, 255))
            image.paste(picture, (0, 0))
            image.paste(band, (0, picture.height))
            images.append(image)
        images[0].save(out, save_all=True, append_images=images[1:], duration=400, loop=0)
        return total
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from curteach_envs.navigation.render import NAV_COLOR_LEGEND

    columns = min(len(frames), 8)
    rows = -(-len(frames) // columns)
    legend_height = 0.5  # inches below the frames for the colours' legend
    fig, axes = plt.subplots(rows, columns, figsize=(1.6 * columns, 1.8 * rows + legend_height), squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < len(frames):
            ax.imshow(frames[k])
            ax.set_title(f"t = {k}", fontsize=7)
    fig.suptitle(f"{split.name} datapoint {index}: greedy rollout, return {total:g}", fontsize=9)
    handles = [Patch(facecolor=np.array(color) / 255, edgecolor="0.5", label=label)
               for label, color in NAV_COLOR_LEGEND]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, legend_height / (1.8 * rows + legend_height), 1, 1))
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return total
