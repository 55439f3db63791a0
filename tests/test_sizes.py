"""The package's rooms stay small: no module of the package (board modules included) or of
``tools/`` is over 800 lines, and no function or method over 150; a longer one is a set of parts
waiting to be named. (Import circles: ``tests/test_layers.py``.)"""

import ast
from pathlib import Path

from test_layers import modules

#: The maintainer tools beside the package (not installed) keep the same sizes.
TOOLS = Path(__file__).parent.parent / "tools"

MODULE_LINES = 800
FUNCTION_LINES = 150


def oversized(name, source):
    """What in ``source`` (module ``name``) is over the limits, as readable lines."""
    found = []
    lines = len(source.splitlines())
    if lines > MODULE_LINES:
        found.append(f"{name}: {lines} lines (at most {MODULE_LINES})")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines "
                             f"(at most {FUNCTION_LINES})")
    return found


def test_no_room_is_oversized():
    found = []
    for name, path in modules():
        found += oversized(name, path.read_text(encoding="utf-8"))
    for path in sorted(TOOLS.rglob("*.py")):
        found += oversized(f"tools/{path.relative_to(TOOLS)}", path.read_text(encoding="utf-8"))
    assert found == []


def test_the_size_check_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    assert oversized("m", f"def f():\n{body}\n") == ["m:1 f: 151 lines (at most 150)"]
    assert oversized("m", "x = 1\n" * MODULE_LINES) == []
    assert oversized("m", "x = 1\n" * (MODULE_LINES + 1)) == ["m: 801 lines (at most 800)"]
