"""The two stacks of docs/installation.md: today's (Gymnasium 1.x, the newest Stable-Baselines3, imitation 1.0.1
installed without its pins) and imitation's own (its pins: Gymnasium 0.29.1, Stable-Baselines3 2.2.1).

The fast tests check the constraints files and what ``pip check`` says of the installed stack. The slow ones run the
installation page's own commands (its ``pip`` blocks, and ``uv sync`` on its ``pyproject.toml``) from the built
wheel in fresh virtual environments, then the README's ``CurriculumBC`` snippet and ``curteach teach`` there; they
need PyPI, and the uv test a local CPU wheel of torch 2.13.0 (below).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import gymnasium as gym
import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLATION = (ROOT / "docs" / "installation.md").read_text(encoding="utf-8")
#: imitation 1.0.1's requirements that today's stack leaves out on purpose (its scripts, tracking and model hub)
LEFT_OUT = ("huggingface-sb3", "optuna", "sacred", "scikit-learn")
#: the packages each stack pins to these versions (the rest of each file is whatever they pulled in)
KEY_PINS = {
    "today": {"imitation": "1.0.1", "torch": "2.13.0", "minari": "0.5.4", "minigrid": "3.2.0"},
    "classic": {"imitation": "1.0.1", "torch": "2.13.0", "minari": "0.5.4", "minigrid": "3.2.0",
                "gymnasium": "0.29.1", "stable-baselines3": "2.2.1"},
}


# the clean environment of tests/project/conftest.py, for the helpers below (set for every test of the module)
_CLEAN_ENVIRONMENT: list = []


@pytest.fixture(autouse=True)
def _clean_environment_helper(clean_environment):
    _CLEAN_ENVIRONMENT[:] = [clean_environment]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_constraints(stack: str) -> dict[str, str]:
    """``{normalised name: version}`` of ``constraints/<stack>.txt``; every line a single ``name==version``."""
    pins = {}
    for line in (ROOT / "constraints" / f"{stack}.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, version = line.split("==")
        assert _normal(name) not in pins, f"{name} pinned twice"
        pins[_normal(name)] = version
    return pins


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


@pytest.mark.parametrize("stack", KEY_PINS)
def test_the_constraints_pin_each_stack(stack):
    pins = read_constraints(stack)
    for name, version in KEY_PINS[stack].items():
        assert pins[name] == version, (stack, name)
    if stack == "today":  # the newest 1.x and 2.x at the time of `make lock`; the issue asks for at least these
        assert _version_tuple(pins["gymnasium"]) >= (1, 2) and pins["gymnasium"].startswith("1.")
        assert _version_tuple(pins["stable-baselines3"]) >= (2, 4) and pins["stable-baselines3"].startswith("2.")
    assert "curteach" not in pins and "pip" not in pins


def test_pip_check_says_only_what_the_stack_leaves_out():
    checked = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    lines = sorted(checked.stdout.strip().splitlines())
    if int(gym.__version__.split(".")[0]) == 0:  # imitation's own stack: everything it asks for
        assert lines == ["No broken requirements found."], checked.stdout
        return
    version = importlib.metadata.version
    expected = [f"imitation 1.0.1 requires {name}, which is not installed." for name in LEFT_OUT] + [
        f"imitation 1.0.1 has requirement gymnasium[classic-control]~=0.29, but you have gymnasium {gym.__version__}.",
        "imitation 1.0.1 has requirement stable-baselines3~=2.2.1, but you have stable-baselines3 "
        f"{version('stable-baselines3')}.",
    ]
    assert lines == sorted(expected), checked.stdout


# ---- the installation page's commands, from the wheel, in fresh environments (slow) ----------------------------


def section(heading: str) -> str:
    """The text of the installation page under ``heading`` up to the next heading of the same level."""
    level = heading.split(" ")[0]
    body = INSTALLATION.split(f"\n{heading}\n", 1)[1]
    return re.split(rf"\n{level} ", body, maxsplit=1)[0]


def pip_blocks() -> list[list[str]]:
    """The ``pip install`` lines of each bash block under "With pip" (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", section("## With pip"), flags=re.S)
    return [[line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("pip install")]
            for block in blocks]


def test_the_page_gives_both_stacks_pip_commands():
    today, classic, *_ = pip_blocks()
    assert today == ["pip install torch==2.13.0", 'pip install "curteach[teaching]"',
                     "pip install --no-deps imitation==1.0.1"]
    assert classic == ["pip install torch==2.13.0", 'pip install "curteach[teaching,classic]"']


def fresh_python(where: Path) -> str:
    venv.EnvBuilder(with_pip=True).create(where)
    return str(where / "bin" / "python")


def run(command: list[str], cwd: Path, timeout: int = 1800) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=_CLEAN_ENVIRONMENT[0](),
                          timeout=timeout)
    assert done.returncode == 0, " ".join(command) + "\n" + done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def readme_curriculum_snippet() -> str:
    """The README's third snippet: CurriculumBC on imitation's BC."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[2]
    assert "CurriculumBC" in snippet
    return snippet


def check_stack(python: str, work: Path, gymnasium_major: int) -> None:
    """In the environment of ``python``: the stack's versions, the README's CurriculumBC snippet, and ``curteach
    teach`` on the installed Gymnasium's CliffWalking id."""
    code = ("import json, gymnasium, stable_baselines3, imitation, curteach_envs\n"
            "print(json.dumps([gymnasium.__version__, stable_baselines3.__version__, imitation.__version__, "
            "curteach_envs.__file__]))")
    gymnasium, sb3, imitation, where = json.loads(run([python, "-c", code], work).strip().splitlines()[-1])
    assert int(gymnasium.split(".")[0]) == gymnasium_major and imitation == "1.0.1"
    assert (_version_tuple(sb3) >= (2, 4)) == (gymnasium_major == 1), sb3
    assert ROOT not in Path(where).parents  # the wheel's copy, not the checkout's
    assert "(5, 400)" in run([python, "-c", readme_curriculum_snippet()], work)
    cliff = "CliffWalking-v1" if gymnasium_major == 1 else "CliffWalking-v0"
    curteach = str(Path(python).parent / "curteach")
    run([curteach, "teach", "--env", cliff, "--runs", "1", "--steps", "2", "--workers", "1", "--no-progress",
         "--no-figures", "--out", str(work / "teach")], work)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, build_distributions) -> Path:
    return build_distributions(tmp_path_factory.mktemp("stack-dist"))[1]


@pytest.mark.slow
@pytest.mark.parametrize("stack, gymnasium_major", [("today", 1), ("classic", 0)])
def test_the_pip_commands_from_the_wheel(wheel, tmp_path, stack, gymnasium_major):
    python = fresh_python(tmp_path / "env")
    printed = ""
    for line in pip_blocks()[0 if stack == "today" else 1]:
        args = [arg.replace("curteach[", f"{wheel}[") for arg in shlex.split(line)[2:]]
        printed += run([python, "-m", "pip", "install", "-q", *args], tmp_path)
    assert "conflict" not in printed and "ERROR" not in printed, printed[-3000:]
    checked = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True,
                             env=_CLEAN_ENVIRONMENT[0]())
    if stack == "today":  # only imitation's own pins and what we leave out of it
        assert all(line.startswith("imitation 1.0.1 ") for line in checked.stdout.strip().splitlines()), checked.stdout
    else:
        assert checked.returncode == 0, checked.stdout
    check_stack(python, tmp_path, gymnasium_major)


def local_torch_wheel() -> Path | None:
    """A CPU wheel of torch 2.13.0 for this Python in a folder of ``PIP_FIND_LINKS``, if there is one: uv does not
    read pip's settings, and from PyPI it would take the CUDA build (several GB)."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in os.environ.get("PIP_FIND_LINKS", "").split():
        for found in sorted(Path(folder).glob(f"torch-2.13.0+cpu-{tag}-{tag}-*.whl")):
            return found
    return None


@pytest.mark.slow
def test_uv_sync_with_override_dependencies(wheel, tmp_path):
    torch = local_torch_wheel()
    if torch is None:
        pytest.skip("needs a local CPU wheel of torch 2.13.0 in a PIP_FIND_LINKS folder (uv would download CUDA's)")
    project = re.findall(r"```toml\n(.*?)```", section("## With uv"), flags=re.S)[0]
    assert 'override-dependencies = ["gymnasium>=1.2,<2", "stable-baselines3>=2.4,<3"]' in project
    # the page's project, with the wheel for curteach and the local file for the PyTorch CPU index
    project = project.replace('"curteach[teaching]"', f'"curteach[teaching] @ {wheel.as_uri()}"')
    project = project.replace('torch = { index = "pytorch-cpu" }', f'torch = {{ path = "{torch}" }}')
    assert str(torch) in project and wheel.as_uri() in project
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "pyproject.toml").write_text(project)
    tools = fresh_python(tmp_path / "tools")
    run([tools, "-m", "pip", "install", "-q", "uv"], tmp_path)
    uv = str(Path(tools).parent / "uv")
    run([uv, "sync", "--python", os.path.realpath(sys.executable), "--cache-dir", str(tmp_path / "uv-cache")],
        tmp_path / "study")
    check_stack(str(tmp_path / "study" / ".venv" / "bin" / "python"), tmp_path, 1)
