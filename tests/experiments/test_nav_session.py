"""One `curteach nav` command: its dataset loaded and hashed once when its runs are computed in its own process, and
the same numbers as a run that loads the file itself."""

import pytest

pytest.importorskip("torch")

from curteach_envs.navigation import dataset as dataset_module  # noqa: E402
from curteach_envs.navigation.dataset import save_dataset  # noqa: E402
from curteach_envs.navigation.generate import generate_dataset  # noqa: E402
from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.nav import data as nav_data  # noqa: E402


def test_nav_loads_and_hashes_its_dataset_once(tmp_path, monkeypatch):
    path = tmp_path / "sp.npz"
    save_dataset(generate_dataset("shortest_path", {"train": 1, "val": 1, "test": 1}, seed=3, workers=1,
                                  progress=False), path)
    calls = []

    def counted(function, name):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(dataset_module, "load_dataset", counted(dataset_module.load_dataset, "load"))
    monkeypatch.setattr(nav_data, "load_dataset", counted(nav_data.load_dataset, "load"))
    monkeypatch.setattr(nav_data, "file_digest", counted(nav_data.file_digest, "hash"))
    monkeypatch.setattr(nav_data, "_CACHE", {})  # nothing prepared by an earlier test
    args = ["nav", "--dataset", str(path), "--curricula", "Agn,Cur", "--runs", "1", "--epochs", "1",
            "--max-batches", "2", "--eval-every", "1", "--workers", "1", "--no-progress", "--no-figures"]
    assert main([*args, "--out", str(tmp_path / "once")]) == 0
    assert sorted(calls) == ["hash", "load"]  # two runs in this process, one load and one hash
    monkeypatch.setattr(nav_data, "_CACHE", {})
    calls.clear()
    nav_data.prepare(path, nav_data.file_digest(path))  # a process that was handed nothing reads the file itself
    assert sorted(calls) == ["hash", "hash", "load"]
    monkeypatch.setattr(nav_data, "_CACHE", {})
    monkeypatch.setattr(nav_data, "_LOADED", {})
    monkeypatch.setattr(nav_data, "hand_over", lambda *_: None)  # each run loads the file itself: the same numbers
    assert main([*args, "--out", str(tmp_path / "read")]) == 0
    for cell in ("Agn", "Cur"):  # run files (curves, settings' fingerprint) and models byte-identical
        for name in ("run_00000.json", "run_00000.model.pt"):
            assert (tmp_path / "once" / "runs" / cell / name).read_bytes() == \
                (tmp_path / "read" / "runs" / cell / name).read_bytes()
