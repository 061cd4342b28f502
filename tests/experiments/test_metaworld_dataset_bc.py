"""Issue 41's Done-when checks on Meta-World: ``make-dataset metaworld`` for two tasks, then ``dataset-bc`` on the two
datasets reports success per task and overall; the held-out reset seeds are none of the data's; the ladder's wider
policy (``--policy mlp-256``)."""

import importlib.util
import json

import numpy as np
import pytest

from curteach_teaching.cli import main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("metaworld") is None,
    reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1): today's stack only")

TASKS = ("reach", "push")


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory):
    """``make-dataset metaworld --tasks reach,push --episodes 6 --seed 1``: the two datasets' folders, in that order."""
    out = tmp_path_factory.mktemp("metaworld")
    assert main(["make-dataset", "metaworld", "--tasks", ",".join(TASKS), "--episodes", "6", "--seed", "1",
                 "--workers", "1", "--out", str(out)]) == 0
    return [out / f"metaworld-{task}-v0" for task in TASKS]


def _dataset_bc(datasets, out, *extra):
    return main(["dataset-bc", "--dataset", ",".join(map(str, datasets)), "--curricula", "Agn,Cur", "--scale", "small",
                 "--runs", "2", "--workers", "1", "--no-progress", "--out", str(out), *extra])


def _check_success_per_task(out, groups, max_batches, eval_every):
    import csv

    with open(out / "summary.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["curriculum"] for row in rows} == {"Agn", "Cur"}
    assert sorted({int(row["batches"]) for row in rows}) == list(range(0, max_batches + 1, eval_every))
    for row in rows:
        per_task = [float(row[f"success_mean:{group}"]) for group in groups]
        assert all(0.0 <= s <= 1.0 for s in per_task)
        # the same number of held-out episodes per task: overall success is the mean of the tasks'
        assert float(row["success_mean"]) == pytest.approx(np.mean(per_task))
    report = json.loads((out / "report.json").read_text())
    for cell in ("Agn", "Cur"):
        final = report["final"][cell]
        assert final["batches"] == max_batches and final["n"] == 2
        assert {f"success_mean:{group}" for group in groups} <= set(final) and "success_mean" in final


def test_dataset_bc_on_two_metaworld_tasks_reports_success_per_task(two_tasks, tmp_path, capsys):
    """The Done-when command at a smaller evaluation (``--scale small``'s steps cut to 10, 2 episodes per task,
    greedy only), so that it takes seconds: the summary and the report hold ``success:<task>`` and overall success at
    every evaluation point."""
    out = tmp_path / "bc"
    assert _dataset_bc(two_tasks, out, "--max-batches", "10", "--eval-every", "10", "--eval-episodes", "2",
                       "--no-sampled") == 0
    printed = capsys.readouterr().out
    assert "Agn after 10 batches (n=2)" in printed and "success" in printed
    assert "bad episodes" not in printed  # a clean dataset's noisy field, all false: nothing to say about it
    _check_success_per_task(out, [d.name for d in two_tasks], 10, 10)
    report = json.loads((out / "report.json").read_text())
    # several datasets: the ladder's rank by default
    assert {own["task"] for own in report["cell_settings"].values()} == {None, "level"}
    # each task's final success is compared in pairs too, and drawn a panel each
    assert {f"success:{d.name}" for d in two_tasks} <= set(report["paired"]["statistics"]["Cur"]["scalars"])
    assert "success_by_dataset.png" in report["files"] and (out / "success_by_dataset.png").is_file()


@pytest.mark.slow
def test_the_done_when_command_as_given(two_tasks, tmp_path):
    """``dataset-bc --dataset <reach>,<push> --curricula Agn,Cur --scale small --runs 2``, unchanged: 200 steps,
    evaluations every 100 on 5 held-out episodes per task (sampled too)."""
    from curteach_teaching.commands.dataset_bc import SMALL

    assert SMALL == {"max_batches": 200, "eval_every": 100, "eval_episodes": 5}
    out = tmp_path / "bc"
    assert _dataset_bc(two_tasks, out) == 0
    _check_success_per_task(out, [d.name for d in two_tasks], 200, 100)
    final = json.loads((out / "report.json").read_text())["final"]["Agn"]
    assert {f"sampled_success_mean:{d.name}" for d in two_tasks} <= set(final)


def test_the_held_out_seeds_are_none_of_the_datasets(two_tasks):
    """The data's reset seeds lie in ``[2**20, 2**31)``, so the evaluation's seeds are ``0, 1, 2, ...``; and the
    evaluator sees Meta-World's success flag (the environment reports it at every step)."""
    from curteach_teaching.datasets import read_pool
    from curteach_teaching.datasets.prepared import success_defined
    from curteach_teaching.experiments.dataset_bc.run import held_out_seeds

    pool = read_pool([str(d) for d in two_tasks])
    seeds = np.asarray(pool.seeds, dtype=np.int64)
    assert seeds.size == 12 and seeds.min() >= 2**20 and seeds.max() < 2**31
    np.testing.assert_array_equal(held_out_seeds(pool.seeds, 5), np.arange(5))
    assert success_defined(pool)


def test_the_wide_policy_is_two_layers_of_256_and_the_default_mlp_is_unchanged():
    import gymnasium as gym
    import torch as th

    from curteach_teaching.learners.factory import make_policy

    observations = gym.spaces.Box(-np.inf, np.inf, (41,), np.float64)
    actions = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    wide = make_policy("mlp-256", observations, actions, 3)
    linears = [m for m in wide.mlp_extractor.policy_net if isinstance(m, th.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(41, 256), (256, 256)]
    assert len(wide.mlp_extractor.value_net) == 0 and wide.value_net.in_features == 41
    assert wide.action_net.in_features == 256 and wide.action_net.out_features == 4
    # 41*256+256 + 256*256+256 (the layers) + 256*4+4 (the mean) + 4 (the log std) + 41+1 (the unused value)
    assert sum(p.numel() for p in wide.parameters()) == 10752 + 65792 + 1028 + 4 + 42
    again = make_policy("mlp-256", observations, actions, 3)
    for a, b in zip(wide.parameters(), again.parameters(), strict=True):
        assert th.equal(a, b)
    default = make_policy("mlp", observations, actions, 3)
    assert [m.out_features for m in default.mlp_extractor.policy_net if isinstance(m, th.nn.Linear)] == [64, 64]
    assert [m.out_features for m in default.mlp_extractor.value_net if isinstance(m, th.nn.Linear)] == [64, 64]
