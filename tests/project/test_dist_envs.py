"""The environments on the newest Gymnasium 1.x without the teaching stack.

The base install (``pip install curteach``) is what ``curteach_envs`` needs: gymnasium, NumPy, SciPy and tqdm. The
slow test installs the wheel with those dependencies from PyPI into a fresh virtual environment, with the newest
Gymnasium 1.x and no torch, imitation, Stable-Baselines3, seals or matplotlib, and runs the environment tests
(:data:`ENV_TEST_MODULES`) and Gymnasium's ``check_env`` there. ``make test-envs-gym1`` runs it alone.

The fast test checks on every run that those test modules still import with the teaching stack blocked, so a new
import in one of them shows up before the slow test runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the test modules that need only the base install (curteach_teaching's NumPy-only modules are in the wheel too)
ENV_TEST_MODULES = (
    "tests/envs/test_envs.py",
    "tests/envs/test_navigation_envs.py",
    "tests/envs/test_navigation_tasks.py",
    "tests/envs/test_car.py",
    "tests/envs/test_tabular.py",
    "tests/envs/test_tabular_sources.py",
    "tests/envs/test_render.py",
)
#: what the teaching extra brings; none of it may be needed by the environments or their tests
TEACHING_STACK = ("torch", "imitation", "stable_baselines3", "seals", "matplotlib")
#: the Gymnasium to test on: the newest 1.x unless CURTEACH_GYMNASIUM names another requirement
GYMNASIUM = os.environ.get("CURTEACH_GYMNASIUM", "gymnasium>=1,<2")

# Makes every import of the teaching stack fail, as in an environment where it is not installed.
BLOCKER = """
import importlib.abc, sys
class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {stack!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
"""


def test_env_tests_import_without_the_teaching_stack():
    code = BLOCKER.format(stack=set(TEACHING_STACK)) + (
        "import pytest\n"
        f"sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *{list(ENV_TEST_MODULES)!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " tests collected" in result.stdout or " test collected" in result.stdout, result.stdout[-2000:]


@pytest.fixture(scope="module")
def gymnasium_1_env(tmp_path_factory, build_distributions, clean_environment, venv_site_packages):
    """A fresh virtual environment with the wheel, its dependencies from PyPI, the newest Gymnasium 1.x, pytest
    and hypothesis: ``(python, site_packages)``."""
    work = tmp_path_factory.mktemp("gym1")
    _, wheel = build_distributions(work)
    env_dir = work / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    install = [python, "-m", "pip", "install", "-q", str(wheel), GYMNASIUM, "pytest", "hypothesis"]
    result = subprocess.run(install, capture_output=True, text=True, env=clean_environment())
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return python, venv_site_packages(env_dir)


@pytest.fixture
def run_in(clean_environment):
    """``run_in(python, code, cwd)``: the last line ``code`` prints, run by ``python`` outside the checkout."""

    def run(python: str, code: str, cwd: Path) -> str:
        result = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=cwd,
                                env=clean_environment())
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout.strip().splitlines()[-1]

    return run


@pytest.mark.slow
def test_the_environment_has_gymnasium_1_and_no_teaching_stack(gymnasium_1_env, tmp_path, run_in):
    python, site = gymnasium_1_env
    code = f"""
import importlib.util, json
import gymnasium, curteach_envs
print(json.dumps({{
    "gymnasium": gymnasium.__version__,
    "envs": curteach_envs.__file__,
    "present": [m for m in {TEACHING_STACK!r} if importlib.util.find_spec(m) is not None],
}}))
"""
    found = json.loads(run_in(python, code, tmp_path))
    assert int(found["gymnasium"].split(".")[0]) == 1, found
    assert Path(found["envs"]).resolve().is_relative_to(site.resolve()), found
    assert found["present"] == [], found


@pytest.mark.slow
@pytest.mark.parametrize(
    "code",
    [
        "import gymnasium as gym\nenv = gym.make('curteach_envs:{env_id}')",
        "import gymnasium as gym\nimport curteach_envs\nenv = gym.make('{env_id}')",
    ],
    ids=["module-prefix", "import-first"],
)
def test_the_forms_that_work_on_both_gymnasium_lines(gymnasium_1_env, tmp_path, code, run_in):
    """In a fresh interpreter each time: Gymnasium 1.x loads no ``gymnasium.envs`` entry points, so ``gym.make``
    needs the ``curteach_envs:`` prefix or ``import curteach_envs`` first; then ``check_env``, a seeded episode and
    the tabular export."""
    python, _ = gymnasium_1_env
    for env_id in ("CarTeach-v0", "ShortestPathTeach-v0", "TSPTeach-v0"):
        script = code.format(env_id=env_id) + """
from gymnasium.utils.env_checker import check_env
check_env(env.unwrapped, skip_render_check=True)
observation, _ = env.reset(seed=0)
env.action_space.seed(0)
assert env.observation_space.contains(observation)
steps, done = 0, False
while not done and steps < 200:
    observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    done, steps = terminated or truncated, steps + 1
mdp = env.unwrapped.tabular()
print(mdp.n_states, env.spec.id)
"""
        n_states, made = run_in(python, script, tmp_path).split()
        assert int(n_states) > 1 and made == env_id


#: small datasets of each kind: (kind, split sizes)
SMALL_DATASETS = (("shortest_path", {"train": 2, "val": 1}), ("tsp", {"train": 4, "test": 2}))


@pytest.mark.slow
def test_navigation_datasets_on_gymnasium_1(gymnasium_1_env, tmp_path, run_in, clean_environment):
    """Generate, save and load (replaying every demonstration) a small dataset of each kind: the same statistics as
    the same seed gives here, on Gymnasium 0.29; then the ``curteach`` command of the base install reads one."""
    from curteach_envs.navigation.generate import generate_dataset

    python, _ = gymnasium_1_env
    code = f"""
import json
from curteach_envs.navigation.dataset import load_dataset, save_dataset
from curteach_envs.navigation.generate import generate_dataset
found = {{}}
for kind, sizes in {SMALL_DATASETS!r}:
    data = generate_dataset(kind, sizes, seed=5, workers=1, progress=False)
    found[kind] = load_dataset(save_dataset(data, kind + ".npz"), verify=True).statistics()
print(json.dumps(found))
"""
    found = json.loads(run_in(python, code, tmp_path))
    expected = {kind: generate_dataset(kind, sizes, seed=5, workers=1, progress=False).statistics()
                for kind, sizes in SMALL_DATASETS}
    assert found == json.loads(json.dumps(expected))
    curteach = str(Path(python).parent / "curteach")
    info = subprocess.run([curteach, "dataset-info", "--json", "--verify", "tsp.npz"], capture_output=True, text=True,
                          cwd=tmp_path, env=clean_environment())
    assert info.returncode == 0, info.stderr[-3000:]
    assert json.loads(info.stdout) == found["tsp"]


@pytest.mark.slow
def test_the_environment_tests_pass_on_gymnasium_1(gymnasium_1_env, tmp_path, clean_environment):
    python, site = gymnasium_1_env
    # curteach_envs imported before pytest starts: every test module gets the wheel's copy, never the checkout's
    code = (
        "import sys, curteach_envs, pytest\n"
        f"assert curteach_envs.__file__.startswith({str(site)!r}), curteach_envs.__file__\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir', {str(ROOT)!r}, "
        f"'-c', {str(ROOT / 'pyproject.toml')!r}, *{[str(ROOT / m) for m in ENV_TEST_MODULES]!r}]))\n"
    )
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                            env=clean_environment())
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout[-2000:]
