"""The package's rooms stay small and its imports run one way.

- No module of the package (board modules included) or of ``tools/`` is over 800 lines, and no
  function or method over 150: a longer one is a set of parts waiting to be named.
- No import circle between the package's modules, counting imports inside functions too:
  a circle hidden in a function still ties two modules into one.
"""

import ast
from pathlib import Path

from test_layers import imports, modules

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


def import_cycles(graph):
    """Every strongly connected group of more than one module in ``graph`` (name -> names it
    imports), each as a sorted list; Tarjan's algorithm, iterative."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return groups


def package_graph():
    graph = {}
    for name, path in modules():
        # A module importing its own package (or a package its own submodule's names through
        # ``from . import``) is how Python packages are assembled, not a circle of two rooms.
        graph[name] = {t for t in imports(name, path)
                       if t.startswith("aes_fpga") and not name.startswith(t + ".")
                       and not t.startswith(name + ".")}
    return graph


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


def test_no_import_circle():
    assert import_cycles(package_graph()) == []


def test_the_circle_check_sees_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
