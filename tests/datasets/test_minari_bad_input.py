"""Bad dataset input: each case is one line of ValueError naming the problem, and nothing is written."""

from __future__ import annotations

import json

import minari
import pytest

from curteach_teaching.datasets import read_pool, write_pool


def _tree(root):
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*")) if root.exists() else []


def _refused(source, match, root, **kwargs):
    before = _tree(root)
    with pytest.raises(ValueError, match=match) as error:
        read_pool(source, **kwargs)
    assert "\n" not in str(error.value)
    assert _tree(root) == before
    return str(error.value)


def test_missing_dataset_by_id_and_by_path(tmp_path, minari_root):
    _refused("test/absent-v0", r"^no local Minari dataset 'test/absent-v0' under .*, and no file or folder of that "
             r"name \(a LeRobot dataset or a robomimic file is given by its path\); curteach never downloads: fetch a "
             r"Minari dataset with `minari download` first$", tmp_path)
    _refused(str(tmp_path / "absent"), r"^no dataset at '.*absent': neither a file, a folder nor a Minari dataset "
             r"id$", tmp_path)
    _refused(tmp_path / "absent", r"^no dataset at '.*absent': the path does not exist$", tmp_path)
    _refused([], "^no dataset given$", tmp_path)


def test_a_folder_that_is_not_a_minari_dataset(tmp_path):
    (tmp_path / "plain" / "data").mkdir(parents=True)
    (tmp_path / "plain" / "notes.txt").write_text("hello")
    _refused(tmp_path / "plain", r"^'.*plain' is not a dataset curteach reads: not a Minari dataset \(no "
             r"data/metadata.json in it or below it\) nor a LeRobot dataset \(no meta/info.json\), and a robomimic "
             r"dataset is a .hdf5/.h5 file$", tmp_path)
    _refused(tmp_path / "plain" / "notes.txt", r"is a file, not a dataset curteach reads: a Minari or a LeRobot "
             r"dataset is a folder, a robomimic file ends in .hdf5 or .h5$", tmp_path)
    (tmp_path / "plain" / "data" / "metadata.json").write_text(json.dumps({"something": "else"}))
    _refused(tmp_path / "plain", r"^cannot read Minari dataset at '.*plain' \(damaged\?\): ValueError: metadata.json "
             r"is not a Minari dataset's metadata$", tmp_path)


@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
def test_a_damaged_data_file(make_pool, minari_root, data_format):
    folder = write_pool(make_pool("box", n_episodes=3), f"test/damaged-{data_format}-v0", data_format=data_format)
    files = [p for p in (folder / "data").rglob("*") if p.is_file() and p.name != "metadata.json"]
    victim = max(files, key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    _refused(f"test/damaged-{data_format}-v0", rf"^cannot read Minari dataset .*test/damaged-{data_format}-v0.* "
             r"\(damaged\?\): \w+", minari_root)


def test_a_damaged_metadata_file(make_pool, minari_root):
    folder = write_pool(make_pool("box"), "test/meta-v0")
    (folder / "data" / "metadata.json").write_text('{"data_format": "hdf5", ')
    _refused(folder, r"^cannot read Minari dataset at .* \(damaged\?\): JSONDecodeError", minari_root)


@pytest.mark.filterwarnings("ignore:.*(eval_env|env_spec).*:UserWarning")  # Minari's, about the test's own dataset
@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
def test_an_empty_dataset(make_pool, minari_root, data_format):
    space = make_pool("box").observation_space
    minari.create_dataset_from_buffers(f"test/empty-{data_format}-v0", [], observation_space=space,
                                       action_space=space, data_format=data_format, author="a", author_email="a@b",
                                       code_permalink="c", algorithm_name="d", description="e")
    _refused(f"test/empty-{data_format}-v0", rf"^Minari dataset 'test/empty-{data_format}-v0' at .* holds no "
             r"episodes$", minari_root)


def test_spaces_that_do_not_match_the_environment(make_pool, minari_root):
    write_pool(make_pool("box"), "test/box-v0")
    message = _refused("test/box-v0", r"^the observation space of environment 'CartPole-v1'", minari_root,
                       env_id="CartPole-v1")
    assert "Box(-1.0, 1.0, (3,), float32)" in message
