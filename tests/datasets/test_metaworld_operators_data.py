"""make-dataset metaworld --operators / --format robomimic: the plain path unchanged, the same bytes for the same
seed, the robomimic file read back (filter keys, environment, seeds), bad flags refused in one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("metaworld", reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1): today's stack only")
pytest.importorskip("h5py", reason="robomimic files need h5py (the datasets extra)")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets.formats.robomimic_read import read_robomimic  # noqa: E402
from curteach_teaching.datasets.sources.metaworld import write_metaworld_datasets  # noqa: E402
from curteach_teaching.datasets.sources.metaworld_episodes import (  # noqa: E402
    _env_and_expert,
    plan_episodes,
    run_expert_episode,
)

QUIET = r".*(A Box observation space (minimum|maximum) value is|Constant\(s\) may be too high)"
SPEC = "careful:0.25,hesitant:0.25,hasty:0.25,noisy:0.25"
MAX_STEPS = 30  # tiny: the styles' effects are not measured here, only their bookkeeping


def _old_loop(plan):
    """The episode loop as it was before operators (expert, Gaussian noise if noisy, clip, float32)."""
    env, expert = _env_and_expert(plan.task, plan.max_steps)
    rng = np.random.default_rng(plan.noise_seed) if plan.noise > 0 else None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET)
        observation, _ = env.reset(seed=plan.seed)
        actions, done = [], False
        while not done:
            action = np.asarray(expert.get_action(observation), dtype=np.float64)
            if rng is not None:
                action = action + plan.noise * rng.standard_normal(action.shape)
            action = np.clip(action, -1.0, 1.0).astype(np.float32)
            observation, _, terminated, truncated, _ = env.step(action)
            actions.append(action)
            done = terminated or truncated
    return np.asarray(actions)


def test_without_operators_the_episodes_are_the_old_loops_and_the_metadata_the_old_keys():
    plans = plan_episodes("push", 4, 1, noise=0.5, noise_share=0.5, max_steps=MAX_STEPS)
    assert plans == plan_episodes("push", 4, 1, noise=0.5, noise_share=0.5, max_steps=MAX_STEPS, operators=None)
    assert all(p.operator is None for p in plans) and sum(p.noise > 0 for p in plans) == 2
    for plan in plans:
        episode = run_expert_episode(plan)
        np.testing.assert_array_equal(episode.actions, _old_loop(plan))
        assert set(episode.metadata()) == {"task", "noisy", "noise", "success", "success_step", "max_steps"}


def test_operators_keep_the_reset_seeds_and_a_noisy_operator_is_the_plain_noisy_episode():
    plain = plan_episodes("push", 8, 1, noise=0.5, max_steps=MAX_STEPS)
    styled = plan_episodes("push", 8, 1, noise=0.5, max_steps=MAX_STEPS, operators=SPEC)
    assert [p.seed for p in styled] == [p.seed for p in plain]  # the same configurations, styles aside
    assert [p.noise_seed for p in styled] == [p.noise_seed for p in plain]
    assert sorted(p.operator for p in styled) == sorted(["careful", "hesitant", "hasty", "noisy"] * 2)
    noisy = next(p for p in styled if p.operator == "noisy")
    np.testing.assert_array_equal(run_expert_episode(noisy).actions, _old_loop(noisy))
    episode = run_expert_episode(next(p for p in styled if p.operator == "hasty"))
    assert episode.metadata()["tier"] == "worse" and episode.metadata()["worse"] is True
    assert episode.metadata()["noisy"] is False


@pytest.mark.parametrize("extra, message", [
    (["--operators", "careful:0.5,sloppy:0.5"], "unknown style 'sloppy'"),
    (["--operators", "careful:0.5,hasty:0.4"], "the shares must sum to 1"),
    (["--operators", "careful:0.5,noisy:0.5"], "--noise must be > 0 exactly when the operators list the noisy style"),
    (["--operators", "careful:0.5,hasty:0.5", "--noise", "0.5"], "--noise must be > 0 exactly when"),
    (["--operators", "careful:1", "--noise", "0.5", "--noise-share", "0.5"], "--noise-share must be 1 with operators"),
])
def test_bad_operator_flags_are_one_line_exit_2_nothing_written(extra, message, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["make-dataset", "metaworld", "--tasks", "push", "--episodes", "4", "--max-steps", "10", "--out", str(out)]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err
    assert not out.exists()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("operators")
    written = {}
    for name in ("a", "b"):
        written[name] = write_metaworld_datasets(root / name, "push,reach", 8, 3, noise=0.5, max_steps=MAX_STEPS,
                                                 operators=SPEC, file_format="robomimic")
    return written


def test_the_same_seed_writes_the_same_bytes(files):
    for task, path in files["a"].items():
        assert path.name == f"metaworld-{task.removesuffix('-v3')}-v0.hdf5"
        assert path.read_bytes() == files["b"][task].read_bytes()


def test_the_robomimic_file_reads_back_with_its_styles_tiers_environment_and_seeds(files):
    plans = [p for p in plan_episodes("push,reach", 8, 3, noise=0.5, max_steps=MAX_STEPS, operators=SPEC)
             if p.task == "push-v3"]
    pool = read_robomimic(files["a"]["push-v3"])
    assert pool.seeds == tuple(p.seed for p in plans)
    spec = pool.env_specs["metaworld-push-v0"]
    assert spec.id == "MetaWorldTask-v0" and spec.kwargs["task"] == "push-v3" and spec.max_episode_steps == MAX_STEPS
    tiers = {"careful": "better", "hesitant": "okay", "hasty": "worse", "noisy": "worse"}
    for meta, plan in zip(pool.metadata, plans):
        for style, tier in tiers.items():
            assert meta[style] == (plan.operator == style)
            assert meta[tier] == (tiers[plan.operator] == tier)
        assert meta["env_args"]["env_kwargs"] == {"task": "push-v3", "max_episode_steps": MAX_STEPS}
    episode = run_expert_episode(plans[0])
    np.testing.assert_array_equal(pool.trajectories[0].obs, episode.observations.astype(np.float64))
    np.testing.assert_array_equal(pool.trajectories[0].acts, episode.actions)
    # the environment from the file replays the demonstration from its seed
    env = pool.make_env("metaworld-push-v0")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET)
        observation, _ = env.reset(seed=pool.seeds[0])
        np.testing.assert_array_equal(observation, pool.trajectories[0].obs[0])
        for t, action in enumerate(pool.trajectories[0].acts):
            observation, *_ = env.step(action)
            np.testing.assert_array_equal(observation, pool.trajectories[0].obs[t + 1])
    env.close()


def test_the_filter_keys_are_byte_strings_of_the_styles_demos_and_rank_reads_the_label(files, tmp_path, capsys):
    import h5py

    path = files["a"]["reach-v3"]
    with h5py.File(path, "r") as file:
        operators = [file["data"][f"demo_{i}"].attrs["operator"] for i in range(8)]
        for style in ("careful", "hesitant", "hasty", "noisy"):
            stored = file["mask"][style][()]
            assert stored.dtype.kind == "S"
            assert [name.decode() for name in stored] == [f"demo_{i}" for i, op in enumerate(operators) if op == style]
        assert sorted(n.decode() for n in file["mask"]["worse"][()]) == sorted(
            f"demo_{i}" for i, op in enumerate(operators) if op in ("hasty", "noisy"))
        assert file["data"].attrs["total"] == sum(file["data"][f"demo_{i}"].attrs["num_samples"] for i in range(8))
    assert main(["rank", "--dataset", str(path.parent), "--compare", "length", "--label", "worse", "--keep", "0.5",
                 "--out", str(tmp_path / "rank")]) == 0
    assert "label worse: 8 true" in capsys.readouterr().out
