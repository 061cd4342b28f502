"""write_robomimic: robomimic's layout, read back by curteach's reader; bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="robomimic files need h5py (the datasets extra)")

from curteach_teaching.datasets.formats.robomimic_read import read_robomimic  # noqa: E402
from curteach_teaching.datasets.formats.robomimic_write import RobomimicDemo, write_robomimic  # noqa: E402


def _demo(steps: int, start: float, terminated: bool) -> RobomimicDemo:
    obs = start + np.arange((steps + 1) * 2, dtype=np.float64).reshape(steps + 1, 2)
    return RobomimicDemo({"flat": obs}, np.full((steps, 1), start, dtype=np.float32), np.ones(steps), terminated,
                         {"seed": np.int64(steps)})


def test_a_written_file_has_robomimics_layout_and_reads_back(tmp_path):
    path = write_robomimic(tmp_path / "d.hdf5", [_demo(3, 0.0, True), _demo(2, 10.0, False)],
                           {"env_name": "Some-v0", "type": 2, "env_kwargs": {}}, {"odd": [1], "none": []})
    with h5py.File(path, "r") as file:
        assert file["data"].attrs["total"] == 5
        np.testing.assert_array_equal(file["data/demo_0/dones"][()], [0, 0, 1])
        np.testing.assert_array_equal(file["data/demo_1/dones"][()], [0, 0])
        np.testing.assert_array_equal(file["data/demo_0/next_obs/flat"][()], file["data/demo_0/obs/flat"][()] + 2)
        assert file["mask/odd"][()].tolist() == [b"demo_1"] and "none" not in file["mask"]
    pool = read_robomimic(path)
    np.testing.assert_array_equal(pool.trajectories[1].obs, _demo(2, 10.0, False).observations["flat"])
    assert [m["odd"] for m in pool.metadata] == [False, True]
    assert pool.seeds == (None, None) and pool.env_specs == {"d": None}  # not a Meta-World file: no environment
    assert [t.terminal for t in pool.trajectories] == [True, False]
    assert not list(tmp_path.glob(".*"))  # no staging file left


@pytest.mark.parametrize("demos, masks, message", [
    ([], {}, "at least one demonstration"),
    ([RobomimicDemo({"flat": np.zeros((3, 2))}, np.zeros((3, 1)), np.zeros(3), False)], {}, "must be (4, d)"),
    ([_demo(2, 0.0, False)], {"bad key": [0]}, "filter key must be letters"),
    ([_demo(2, 0.0, False)], {"k": [1]}, "mask/k names a demonstration outside 0..0"),
])
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, demos, masks, message):
    with pytest.raises(ValueError) as error:
        write_robomimic(tmp_path / "d.hdf5", demos, {}, masks)
    assert message in str(error.value)
    assert not list(tmp_path.iterdir())
