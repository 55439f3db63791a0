"""The code stays within the project's ruff rules (pyproject.toml, [tool.ruff])."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.skipif(shutil.which("ruff") is None and
                    subprocess.run([sys.executable, "-m", "ruff", "--version"],
                                   capture_output=True).returncode != 0,
                    reason="ruff is not installed (pip install -e '.[test]' installs it)")
def test_ruff_clean():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "aes_fpga", "tests", "boards"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
