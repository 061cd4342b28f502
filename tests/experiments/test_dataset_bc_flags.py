"""dataset-bc's flags checked before any work (issue 43): a flag the cells never read is checked all the same, and
each bad value is one line, exit 2, with nothing written; a damaged ensemble cache is said in one line and fitted
again."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets.labels import bad_episodes  # noqa: E402
from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402

DATASET = "test/cartpole-scripted-v0"
#: the smallest sweep that computes something
QUICK = ["--runs", "1", "--max-batches", "10", "--eval-every", "10", "--eval-episodes", "1", "--backend", "serial",
         "--no-progress", "--no-figures"]


@pytest.fixture
def refused(cartpole_root, tmp_path, monkeypatch, capsys):
    """``refused(*flags) -> str``: dataset-bc with ``flags`` exits 2 with one line on stderr and writes nothing;
    returns the line."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))

    def run(*flags: str) -> str:
        out = tmp_path / "out"
        assert main(["dataset-bc", "--dataset", DATASET, *flags, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert not out.exists()
        return err

    return run


@pytest.mark.parametrize("target", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("runs", ["1", "2"])
def test_a_target_that_is_not_finite_is_refused_before_any_run(refused, target, runs):
    # issue 43, item 2: with --runs 2 every run was computed, then refused; with --runs 1 silently accepted
    assert refused(f"--target={target}", "--runs", runs).endswith(f"--target must be a finite number; got {target}")


def test_the_bad_field_must_be_a_boolean_field_of_every_episode(refused):
    # issue 43, item 6: an integer field marked every episode bad; an unknown field was ignored
    err = refused("--bad-field", "seed")
    assert "--bad-field must be a boolean metadata field (True or False in every episode); 'seed' is 100 in " \
           f"episode 0 of the pool (id 0 of {DATASET})" in err
    for field in ("nosuch", "noisy"):  # named, even as the default's name, it must be there
        err = refused("--bad-field", field)
        assert f"--bad-field must be a boolean metadata field of every episode; {field!r} is not in that of episode " \
               f"0 of the pool (id 0 of {DATASET}) (fields: id, seed, total_steps)" in err


def test_the_bad_field_read_from_a_pool(make_pool_with_metadata):
    pool = make_pool_with_metadata([{"bad": True, "n": 1}, {"bad": False, "n": 0}, {"bad": np.bool_(True), "n": 1}])
    assert bad_episodes(pool, "bad").tolist() == [True, False, True]
    assert bad_episodes(pool, None) is None  # no field named and no 'noisy': no table, as before
    with pytest.raises(ValueError, match=r"^bad_field must be a boolean .*; 'n' is 1 in episode 0 of the pool"):
        bad_episodes(pool, "n")
    noisy = make_pool_with_metadata([{"noisy": False}, {"noisy": True}, {"noisy": False}])
    assert bad_episodes(noisy, None).tolist() == [False, True, False]  # the default, where every episode has it
    # not:FIELD: bad where the field is False (not:success, the failed episodes), checked as the field is
    assert bad_episodes(pool, "not:bad").tolist() == [False, True, False]
    with pytest.raises(ValueError, match=r"^bad_field must be a boolean .*; 'n' is 1 in episode 0 of the pool"):
        bad_episodes(pool, "not:n")
    with pytest.raises(ValueError, match=r"^bad_field 'not:' names no field after 'not:'"):
        bad_episodes(pool, "not:")
    partly = make_pool_with_metadata([{"noisy": False}, {}, {"noisy": 1}])
    assert bad_episodes(partly, None) is None
    with pytest.raises(ValueError, match=r"'noisy' is not in that of episode 1 of the pool \(id 1 of g\)"):
        bad_episodes(partly, "noisy")


@pytest.fixture
def make_pool_with_metadata():
    """``make(metadata) -> EpisodePool``: one two-step episode per metadata dict, all of the group ``g``."""
    import gymnasium as gym
    from imitation.data.types import TrajectoryWithRew

    from curteach_teaching.datasets import EpisodePool

    def make(metadata: list[dict]):
        trajectories = [TrajectoryWithRew(obs=np.zeros((3, 1), np.float32), acts=np.zeros(2, np.int64), infos=None,
                                          terminal=True, rews=np.ones(2)) for _ in metadata]
        return EpisodePool.from_trajectories(trajectories, gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(2),
                                             group="g", metadata=metadata)

    return make


def test_a_cell_given_twice_is_refused(refused):
    # issue 43, item 7: Cur and Cur@order are the same runs (as Agn,Agn, refused before)
    assert refused("--curricula", "Cur,Cur@order").endswith(
        "--curricula must not repeat a cell: 'Cur' and 'Cur@order' are the same (use order, task score length); "
        "give it once")
    assert "'Cur-T/length' and 'Cur-T'" in refused("--curricula", "Agn,Cur-T/length,Cur-T")
    assert "'Cur' and 'Cur@select'" in refused("--curricula", "Cur,Cur@select", "--use", "select")
    # the same curriculum with another use or task score is another cell
    cells = DatasetBCExperiment(curricula=("Agn", "Cur", "Cur@select", "Cur/return")).cells
    assert cells == ("Agn", "Cur", "Cur+select", "Cur+return")


def test_a_negative_seed_names_the_flag(refused):
    # issue 43, item 8: "teacher_seed must be ...", the setting's name
    assert refused("--seed", "-1").endswith(": --seed must be an integer >= 0; got -1")


@pytest.mark.parametrize("flags, message", [
    (["--task-difficulty", "no_such_field", "--curricula", "Agn"], "no task score 'no_such_field'"),
    (["--task-difficulty", "no_such_field", "--curricula", "Agn,Cur/length"], "no task score 'no_such_field'"),
    (["--task-difficulty", "level", "--curricula", "Agn"], "give at least two"),
    (["--keep", "0", "--curricula", "Agn,Cur"], "--keep must be a fraction in (0, 1]; got 0.0"),
    (["--temperature", "-1", "--curricula", "Agn"], "--temperature must be a finite number > 0; got -1.0"),
    (["--ensemble-size", "1", "--curricula", "Agn"], "--ensemble-size must be an integer >= 2; got 1"),
])
def test_a_flag_the_cells_do_not_read_is_checked_all_the_same(refused, flags, message):
    # issue 43, item 10: --task-difficulty no_such_field --curricula Agn ran and wrote a summary
    assert message in refused(*flags)


def test_a_score_function_that_raises_is_one_line(refused, monkeypatch):
    # issue 43, item 12: a user's score function that raises
    module = types.ModuleType("my_raising_scores")
    module.raises = lambda pool: 1 / 0
    monkeypatch.setitem(sys.modules, "my_raising_scores", module)
    assert refused("--task-difficulty", "my_raising_scores:raises").endswith(
        "task score factory 'raises' raised ZeroDivisionError: division by zero")


def test_a_damaged_cache_file_is_not_read(tmp_path):
    teacher = EnsembleTeacher(size=2)
    path = tmp_path / "ensemble.npz"
    assert teacher.read_cache(path, 3) == (None, "missing")
    arrays = {"difficulty": np.array([0.5, 1.5, 2.5]), "log_likelihood": -np.ones((2, 3)),
              "in_bag": np.array([[True, False, True], [False, True, True]])}
    np.savez(path, **arrays)
    scores, problem = teacher.read_cache(path, 3)
    assert problem == "" and scores.difficulty.tolist() == [0.5, 1.5, 2.5] and scores.in_bag.dtype == bool
    assert teacher.read_cache(path, 4)[1] == "arrays of shapes ((3,), (2, 3), (2, 3)), not those of 2 members and 4 " \
                                              "demonstrations"
    whole = path.read_bytes()
    for cut in (0, 10, len(whole) // 2, len(whole) - 1):  # a file cut short, as by a full disk or a killed copy
        path.write_bytes(whole[:cut])
        scores, problem = teacher.read_cache(path, 3)
        assert scores is None and problem.startswith(("BadZipFile", "EOFError", "ValueError")), problem
    np.savez(path, **{**arrays, "difficulty": np.array([0.5, np.nan, 2.5])})
    assert teacher.read_cache(path, 3) == (None, "scores that are not finite")
    np.savez(path, difficulty=arrays["difficulty"])
    assert teacher.read_cache(path, 3)[1].startswith("KeyError")


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_damaged_ensemble_cache_is_said_and_fitted_again(cartpole_root, tmp_path, monkeypatch, capsys, overwrite):
    # issue 43, item 4: a truncated cache was a BadZipFile traceback on every rerun, --overwrite included
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    args = ["dataset-bc", "--dataset", DATASET, "--curricula", "Agn,Cur", "--task-difficulty", "ensemble",
            "--ensemble-size", "2", "--ensemble-batches", "5", *QUICK, "--out", str(out)]
    assert main(args) == 0
    (cache,) = (out / "teachers").glob("ensemble-*.npz")
    whole = cache.read_bytes()
    summary = (out / "summary.csv").read_bytes()
    capsys.readouterr()
    cache.write_bytes(whole[: len(whole) // 3])
    assert main([*args, *(["--overwrite"] if overwrite else [])]) == 0
    printed = capsys.readouterr().out
    assert f"ensemble teacher: the cached scores {cache} are damaged (BadZipFile: " in printed
    assert "fitting them again" in printed and "ensemble teacher ready (fitted in" in printed
    assert cache.read_bytes() == whole  # fitted again from the same seed: the same scores, byte for byte
    assert (out / "summary.csv").read_bytes() == summary
    report = json.loads((out / "report.json").read_text())
    assert report["final"]["Cur"]["n"] == 1


def test_the_figures_name_the_datasets_not_their_paths():
    from curteach_teaching.commands.dataset_bc import figure_title

    assert figure_title(["cartpole/scripted-v0"]) == "dataset-bc: cartpole/scripted-v0"
    # a ladder of ten datasets given by path made a title wider than the figure
    assert figure_title([f"task-{i}" for i in range(10)]) == "dataset-bc: task-0, task-1, task-2 and 7 more"
    # a LeRobot task is a sentence: each name is cut to 40 characters
    task = "pick up the red block and put it in the green bowl on the left"
    assert figure_title([task, "stack"]) == f"dataset-bc: {task[:39]}…, stack"
