"""One accurate line for a file that is not a model, counts in words ("1 run"), errors that name the flags, and a
dataset file never replaced unasked."""


import pytest

from curteach_envs._util import counted
from curteach_teaching.cli import main


def test_counts_in_words():
    assert [counted(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]


def _snapshot(root):
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None for path in root.rglob("*")}


def test_nav_show_names_a_file_that_is_not_a_model_in_one_line_before_writing(tmp_path, capsys):
    th = pytest.importorskip("torch")
    from curteach_teaching.learners.networks import NavigationCNNPolicy

    text = tmp_path / "notes.model.pt"
    text.write_text("hello world\n")
    listed = tmp_path / "list.model.pt"
    th.save([1, 2], listed)
    other = tmp_path / "other.model.pt"
    th.save({"a": th.zeros(2)}, other)
    resized = tmp_path / "resized.model.pt"
    state = NavigationCNNPolicy.for_navigation(seed=0).state_dict()
    state["net.head.bias"] = th.zeros(5)
    th.save(state, resized)
    expected = {
        text: "is not a torch file, or a damaged one; --model takes a run's model written by curteach nav",
        listed: "holds a list, not a network's weights",
        other: "holds the weights of another network (missing: net.block1.c1.bias,",
        resized: "holds the weights of another network (other shapes: net.head.bias)",
    }
    before = _snapshot(tmp_path)
    for path, message in expected.items():
        # no --dataset: a refused model must not leave a generated dataset behind
        assert main(["nav-show", "--model", str(path), "--task", "tsp", "--out", str(tmp_path / "roll.png")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err and "KeyError" not in err, err
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["car-irl", "car-irl-observability", "car-bc", "car-trainers",
                                     "car-irl-sensitivity", "car-bc-sensitivity"])
def test_every_car_command_names_a_bad_init_in_one_line_and_writes_nothing(command, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([command, "--init", "T9", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--init must be one of ['none', 'T0', 'T0-T1'" in err and "got 'T9'" in err, err
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["teach", "--env", "FrozenLake-v1", "--runs", "0"], "--runs must be an integer in [1, 100000]; got 0"),
    (["teach", "--env", "FrozenLake-v1", "--seed", "-1"], "--seed must be an integer >= 0; got -1"),
    (["teach", "--env", "FrozenLake-v1", "--workers", "0"], "--workers must be an integer >= 1; got 0"),
    (["teach", "--env", "FrozenLake-v1", "--demos-per-start", "0"], "--demos-per-start must be an integer in [1, "
                                                                     "10000]; got 0"),
    (["teach", "--env", "FrozenLake-v1", "--demo-length", "0"], "--demo-length must be an integer in [1, 10000]"),
    (["car-irl", "--runs", "-2"], "--runs must be an integer in [1, 100000]; got -2"),
    (["make-dataset", "shortest-path", "--seed", "-3"], "--seed must be an integer >= 0; got -3"),
    (["make-dataset", "tsp", "--workers", "0"], "--workers must be an integer >= 1; got 0"),
    (["make-dataset", "tsp", "--workers", "300"], "--workers must be an integer in [1, 256]; got 300"),
    (["make-dataset", "babyai", "--levels", "GoToLocal", "--episodes", "0"], "--episodes must be an integer >= 1"),
])
def test_errors_name_the_flag_not_the_library_setting(argv, message, tmp_path, capsys):
    out = tmp_path / ("out.npz" if argv[0] == "make-dataset" and argv[1] != "babyai" else "out")
    assert main([*argv, "--out", str(out), *(["--no-progress"] if argv[0] != "make-dataset" else [])]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err
    assert not list(tmp_path.iterdir())  # refused before anything is written


def test_make_dataset_refuses_to_replace_a_file_unless_asked(tmp_path, capsys):
    out = tmp_path / "sp.npz"
    out.write_bytes(b"a week of generation")
    assert main(["make-dataset", "shortest-path", "--split-sizes", "small", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"curteach make-dataset: error: --out {str(out)!r} exists; pass --overwrite to replace it, or "
                   "choose another --out")
    assert out.read_bytes() == b"a week of generation" and sorted(tmp_path.iterdir()) == [out]
    assert main(["make-dataset", "shortest-path", "--split-sizes", "small", "--workers", "1", "--no-progress",
                 "--overwrite", "--out", str(out)]) == 0
    assert out.read_bytes() != b"a week of generation"
    assert main(["make-dataset", "tsp", "--format", "minari", "--overwrite", "--out", str(tmp_path / "m")]) == 2
    assert "--overwrite replaces an --out file (--format npz); remove the Minari" in capsys.readouterr().err


def test_make_dataset_lists_its_sources_from_the_registry_and_each_takes_only_its_flags(tmp_path, capsys):
    from curteach_teaching.datasets.sources import SOURCES, load_source

    with pytest.raises(SystemExit):
        main(["make-dataset", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Generate a navigation dataset" not in text  # issue 43: the help was navigation's only
    for name in SOURCES.names():
        assert f"{name}: {load_source(name).summary}" in text
    # a flag of another source (or of another format) is refused before any work, nothing written
    for argv in (["tsp", "--levels", "GoToLocal"], ["babyai", "--levels", "GoToLocal", "--episodes", "1",
                                                    "--split-sizes", "small"],
                 ["babyai", "--levels", "GoToLocal", "--episodes", "1", "--format", "npz"]):
        with pytest.raises(SystemExit) as stop:
            main(["make-dataset", *argv, "--out", str(tmp_path / "x")])
        assert stop.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err
    assert main(["make-dataset", "tsp", "--minari-storage", "arrow", "--out", str(tmp_path / "t.npz")]) == 2
    assert "--minari-storage applies to --format minari only" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_read_only_out_is_refused_in_words_of_datasets(tmp_path, capsys, monkeypatch):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    # a folder nobody may write in (chmod alone does not stop root, who runs some test machines)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if str(path).startswith(str(locked))
                        else real_access(path, mode, **kw))
    for argv in (["shortest-path", "--out", str(locked / "sp.npz")],
                 ["tsp", "--format", "minari", "--out", str(locked / "m")],
                 ["babyai", "--levels", "GoToLocal", "--episodes", "1", "--out", str(locked / "b")]):
        assert main(["make-dataset", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cannot write in {str(locked)!r}" in err, err
        assert "run" not in err  # issue 43: it ended with "every run finished before it is saved"
    assert not list(locked.iterdir())
