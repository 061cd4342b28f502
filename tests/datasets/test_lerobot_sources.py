"""Where a LeRobot dataset is looked for: a source that is none names the LeRobot dataset meant (a folder above or
below its root, a file inside it, lerobot's download folder for a Hugging Face repo id); nothing is downloaded."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("imitation")

from curteach_teaching.datasets import read_pool  # noqa: E402


def _refused(source) -> str:
    with pytest.raises(ValueError) as caught:
        read_pool(source)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_folder_around_a_lerobot_root_names_it(robot_files, tmp_path):
    episodes = robot_files.reaching_episodes(4, seed=1)
    root = robot_files.write_lerobot_v3(tmp_path / "datasets" / "pusht", episodes, files=1)
    meant = f"did you mean the LeRobot dataset {str(root)!r}?"
    above = _refused(tmp_path / "datasets")
    assert "is not a dataset curteach reads: not a Minari dataset" in above and "nor a LeRobot dataset" in above
    assert above.endswith(meant)
    assert _refused(tmp_path).endswith(meant)  # two levels above: lerobot's <home>/<owner>/<name>
    assert _refused(root / "data").endswith(meant)
    assert _refused(root / "meta" / "info.json").endswith(meant)
    robot_files.write_lerobot_v21(tmp_path / "datasets" / "aloha", episodes)
    assert _refused(tmp_path / "datasets").endswith(
        f"it holds LeRobot datasets, read one at a time: {str(tmp_path / 'datasets' / 'aloha')!r}, {str(root)!r}")
    (tmp_path / "empty").mkdir()
    assert "did you mean" not in _refused(tmp_path / "empty") and "it holds" not in _refused(tmp_path / "empty")


def test_a_repo_id_says_nothing_is_downloaded(robot_files, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    monkeypatch.setenv("HF_LEROBOT_HOME", str(tmp_path / "hf"))
    monkeypatch.chdir(tmp_path)
    message = _refused("lerobot/pusht")
    assert "curteach never downloads" in message and "a LeRobot dataset or a robomimic file is given by its path" \
        in message
    assert message.endswith(f"for the Hugging Face dataset 'lerobot/pusht', give its local folder (lerobot downloads "
                            f"it to {str(tmp_path / 'hf' / 'lerobot' / 'pusht')!r})")
    local = robot_files.write_lerobot_v3(tmp_path / "hf" / "lerobot" / "pusht", robot_files.reaching_episodes(3),
                                         files=1)
    assert _refused("lerobot/pusht").endswith(f"lerobot keeps the Hugging Face dataset 'lerobot/pusht' at "
                                              f"{str(local)!r}: give that folder")
    assert len(read_pool(local)) == 3
    typo = _refused("pusht_typo")
    assert typo.startswith("no local Minari dataset 'pusht_typo' under ") and "Hugging Face" not in typo
    assert "Hugging Face" not in _refused("test/absent-v0")  # a Minari id with its version
    assert not (tmp_path / "minari").exists()
