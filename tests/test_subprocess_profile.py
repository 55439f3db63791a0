"""tools/subprocess_profile.py: a test run's programs and tests, their CPU time."""

import json
import os
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).parent.parent / "tools"


def test_profile_counts_each_program_run(tmp_path):
    (tmp_path / "test_two_programs.py").write_text(
        "import subprocess, sys\n"
        "def test_runs():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(range(3_000_000))'], check=True)\n"
        "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
        "def test_computes():\n"
        "    sum(range(3_000_000))\n")
    log = tmp_path / "profile.jsonl"
    env = {**os.environ, "PYTHONPATH": str(TOOLS), "SUBPROCESS_PROFILE": str(log)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "subprocess_profile", "-q",
                           "-n", "0", "-p", "no:cacheprovider", "-c", os.devnull,
                           str(tmp_path / "test_two_programs.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    runs = [r for r in lines if r["kind"] != "test"]
    assert [r["test"].split("::")[-1] for r in runs] == ["test_runs", "test_runs"]
    assert runs[0]["cpu_s"] > runs[1]["cpu_s"] >= 0
    assert "programs run by the tests" in proc.stdout and "test_runs" in proc.stdout
    # each test's own CPU time and its programs': the programs' in test_runs, its own in
    # test_computes
    tests = {r["test"].split("::")[-1]: r for r in lines if r["kind"] == "test"}
    assert set(tests) == {"test_runs", "test_computes"}
    assert tests["test_runs"]["children_cpu_s"] >= runs[0]["cpu_s"] + runs[1]["cpu_s"] - 0.02
    assert tests["test_computes"]["children_cpu_s"] == 0
    assert tests["test_computes"]["self_cpu_s"] > 0
    assert "the most costly tests" in proc.stdout and "test_computes" in proc.stdout
