"""The toy-text ids Gymnasium 1.x renamed: each stack's own spelling runs, the other's gets one line naming it."""

import hashlib
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from curteach_envs import TabularMDP
from curteach_envs.gymnasium_ids import RENAMED, check_registered_id, registered_id

GYMNASIUM_1 = int(gym.__version__.split(".")[0]) >= 1
# 0.29's spelling -> the installed Gymnasium's (Taxi-v4 only from 1.3 on; registered_id decides from the registry)
EXPECTED = {"CliffWalking-v0": "CliffWalking-v1" if GYMNASIUM_1 else "CliffWalking-v0",
            "Taxi-v3": "Taxi-v4" if "Taxi-v4" in gym.registry else "Taxi-v3"}


@pytest.mark.parametrize("old, new", RENAMED.items())
def test_either_spelling_gives_the_installed_id(old, new):
    assert registered_id(old) == registered_id(new) == EXPECTED[old]
    assert EXPECTED[old] in gym.registry
    check_registered_id(EXPECTED[old])  # the installed spelling passes


def test_other_ids_pass_unchanged():
    assert registered_id("FrozenLake-v1") == "FrozenLake-v1"
    assert registered_id("NoSuchEnv-v9") == "NoSuchEnv-v9"  # left for gym.make to refuse
    check_registered_id("FrozenLake-v1")
    check_registered_id("NoSuchEnv-v9")


@pytest.mark.parametrize("old", RENAMED)
def test_the_other_spelling_is_refused_in_one_line(old):
    installed = EXPECTED[old]
    other = RENAMED[old] if installed == old else old
    if other == installed:
        pytest.skip(f"the installed Gymnasium registers {installed} under both spellings")
    how = "still calls it" if installed == old else "renamed it"
    message = f"{other} is not registered by the installed Gymnasium {gym.__version__}, which {how} {installed}"
    with pytest.raises(ValueError, match=f"^{message}; use {installed}$"):
        check_registered_id(other)


# sha256 of the export's transitions, reward, initial distribution and features (float64 bytes), the same on
# Gymnasium 0.29.1 (CliffWalking-v0, Taxi-v3) and 1.4.0 (CliffWalking-v1, Taxi-v4)
EXPORT_DIGESTS = {"CliffWalking-v0": "1f63b32cfbc9df69", "Taxi-v3": "28b7193c77258576"}


@pytest.mark.parametrize("old", RENAMED)
def test_the_renamed_ids_export_the_same_mdp_as_0_29s(old):
    # so the numbers of 0.29's ids (docs/results/teach-CliffWalking-v0) hold for the installed id
    mdp = TabularMDP.from_gymnasium(gym.make(registered_id(old)), gamma=0.9)
    digest = hashlib.sha256()
    for array in (mdp.transitions.toarray(), mdp.reward, mdp.initial_state_dist, mdp.features):
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    assert digest.hexdigest()[:16] == EXPORT_DIGESTS[old]


def run_teach(args, tmp_path):
    return subprocess.run([sys.executable, "-m", "curteach_teaching.cli", "teach", *args,
                           "--out", str(tmp_path / "out"), "--runs", "1", "--steps", "3", "--workers", "1",
                           "--no-progress", "--no-figures"],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("old, learner", [("CliffWalking-v0", "maxent-irl"), ("Taxi-v3", "bc")])
def test_teach_runs_on_the_installed_id_and_names_it_for_the_other(old, learner, tmp_path):
    installed = EXPECTED[old]
    done = run_teach(["--env", installed, "--learner", learner, "--teachers", "Agn,Cur"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "summary.csv").is_file()
    other = RENAMED[old] if installed == old else old
    if other in gym.registry:
        pytest.skip(f"the installed Gymnasium registers {other} too")
    refused = run_teach(["--env", other], tmp_path / "refused")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [f"curteach teach: error: {other} is not registered by the installed "
                                                   f"Gymnasium {gym.__version__}, which "
                                                   f"{'renamed it' if installed != old else 'still calls it'} "
                                                   f"{installed}; use {installed}"]
