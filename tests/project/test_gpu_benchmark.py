"""benchmarks/gpu.py without a GPU: one line and exit status 2 (its `--allow-cpu --quick` try-out takes minutes on a
shared CPU and is run by hand, not here)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch as th

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(th.cuda.is_available(), reason="checks the refusal of a machine without a GPU")
def test_the_gpu_benchmark_refuses_in_one_line_without_a_gpu(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OUT": str(tmp_path)}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "torch sees no GPU" in done.stderr
    assert not any(tmp_path.iterdir())  # nothing written


def test_the_gpu_benchmark_refuses_bad_flags():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--concurrent", "1,x"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 2 and "--concurrent" in done.stderr
