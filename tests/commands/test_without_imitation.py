"""Without imitation (today's stack installs it last, with ``--no-deps``; a user may not have it yet): what does not
need it works, and the commands that need it say in one line how to install it."""

from __future__ import annotations

import subprocess
import sys

# Makes every import of imitation fail, as in an environment where it is not installed.
BLOCKER = """
import importlib.abc, sys
class _NoImitation(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "imitation":
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None
sys.meta_path.insert(0, _NoImitation())
"""
QUICK = ["--runs", "1", "--workers", "1", "--no-progress"]


def run_blocked(code: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + code], capture_output=True, text=True, cwd=tmp_path,
                          timeout=600)


def run_commands(commands: list[list[str]], tmp_path) -> subprocess.CompletedProcess:
    """Run each ``curteach`` command in one interpreter with imitation blocked (one start-up for all); print each
    exit code on a line of its own."""
    code = (f"from curteach_teaching.cli import main\nfor args in {commands!r}:\n    print('exit', main(args))\n"
            "assert 'imitation' not in sys.modules, 'imitation was imported'\n")
    return run_blocked(code, tmp_path)


def test_the_library_without_imitation(tmp_path):
    code = """
import numpy as np
from curteach_envs import CarTeachEnv
from curteach_teaching import (CurriculumTeacher, MaxEntIRLLearner, hard_value_iteration, occupancy_per_start,
                               sample_demonstrations)
mdp = CarTeachEnv(layout_seed=0).tabular()
expert = hard_value_iteration(mdp)
pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0))
cur = CurriculumTeacher(pool, expert.log_policy)
learner = MaxEntIRLLearner(mdp, learning_rate=0.17)
rho = occupancy_per_start(mdp, expert.policy)
for step in range(3):
    state = cur.select(learner, step)
    learner.update(rho[learner.tasks.start_index[state]], state)
assert 'imitation' not in sys.modules
print('taught')
"""
    done = run_blocked(code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "taught"


#: the commands that do not need imitation, each small
WITHOUT_IMITATION = {
    "car-irl": ["car-irl", *QUICK, "--steps", "3", "--no-figures"],
    "teach-bc": ["teach", "--env", "FrozenLake-v1", "--learner", "bc", "--teachers", "Agn,Cur", "--steps", "3", *QUICK,
                 "--no-figures"],
    "teach-maxent-irl": ["teach", "--env", "FrozenLake-v1", "--teachers", "Agn,Omn,Cur", "--steps", "3", *QUICK,
                         "--no-figures"],
    "theorem2": ["car-irl-theorem2", *QUICK, "--steps", "3"],
    "monotonicity": ["car-monotonicity", "--mdp", "random", "--gamma", "1", "--checkpoints", "0,2", *QUICK],
}


def test_commands_that_do_not_need_imitation_run(tmp_path):
    commands = [[*args, "--out", str(tmp_path / name)] for name, args in WITHOUT_IMITATION.items()]
    done = run_commands(commands, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("exit ")] == ["exit 0"] * len(commands), \
        done.stdout[-3000:] + done.stderr[-3000:]
    assert all((tmp_path / name / "summary.csv").is_file() for name in WITHOUT_IMITATION)


def test_commands_that_need_imitation_say_so_in_one_line(tmp_path):
    commands = [["car-bc", *QUICK, "--steps", "2", "--no-figures", "--out", str(tmp_path / "bc")],
                ["car-trainers", *QUICK, "--trainers", "mce-irl", "--no-figures", "--out", str(tmp_path / "trainers")]]
    done = run_commands(commands, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("exit ")] == ["exit 2", "exit 2"]
    assert done.stderr.strip().splitlines() == [
        f"curteach {args[0]}: error: this command needs imitation, which is not installed; install it with pip "
        "install --no-deps imitation==1.0.1 (today's stack, after curteach[teaching]) or pip install "
        "'curteach[teaching,classic]' (imitation's own pins)" for args in commands
    ]
