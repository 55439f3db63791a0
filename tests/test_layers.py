"""The package's layering: no module imports one from a layer above it, and the host side of
the appliance runs without the HDL toolchain.

Layers, bottom up (a module may import its own layer and those below; function-level imports
count too):

    0  model, gcm_model, cmac_model,      pure Python: the AES, GCM, CMAC and key wrap models,
       keywrap, params, ticker, cache     Op/Mode/KeySize, a ticker, the cache folder
    1  appliance host side                spec, errors, cobs, frame, messages, reference, client,
                                          addresses (the one IPv4/MAC/UDP port rule, read by the
                                          build's options and the gateware alike),
                                          udp_client (the UDP link and device), links (links
                                          chosen by name; the simulated one, in layer 9, is
                                          imported by its name only when asked for)
    1  hw, platform                       gateware helpers, vendor detection
    2  primitives                         block RAM and wide XOR, portable and Xilinx
    3  cores                              the AES cores, their interface and registry
    4  modes                              ECB/CBC/CTR around any core
    4  entropy                            the entropy source (ring oscillators, health
                                          tests, conditioning through any core)
    5  appliance.gateware                 the appliance's layers in gateware, transports
    6  designs                            complete designs (the self-test)
    7  flow (yosys, synth, postsynth,     tool flows a board module or a bench may use; the
       clocking, tools, nextpnr, vivado,  pieces the builds and place and route share (tool
       stages, report, templates)         discovery, nextpnr's options and report, Vivado's
                                          reports, build stages, the build report, Amaranth's
                                          build templates corrected)
    8  boards                             board modules: clocks, pins, a hosted design
    9  flow.build, flow.route,            bitstream builds, place and route, the core comparison;
       flow.compare, sim                  simulation harnesses, links, benches
    9  export                             a core behind AXI4-Stream ports, written out as one
                                          Verilog file with its ports described in JSON
   10  commands, protocol                 the commands (options, runs, reports), the old name
   11  cli                                the entry point assembling the commands

The README generator (tools/readme_figures.py) is a maintainer's tool outside the package.
"""

import ast
import functools
from pathlib import Path

import aes_fpga

ROOT = Path(aes_fpga.__file__).parent
BOARDS = ROOT.parent / "boards"

RANKS = {
    "aes_fpga": 0, "aes_fpga._lazy": 0, "aes_fpga.cache": 0, "aes_fpga.model": 0,
    "aes_fpga.params": 0, "aes_fpga.ticker": 0, "aes_fpga.gcm_model": 0,
    "aes_fpga.cmac_model": 0, "aes_fpga.keywrap": 0,
    "aes_fpga.appliance": 1, "aes_fpga.appliance.addresses": 1, "aes_fpga.hw": 1,
    "aes_fpga.platform": 1,
    "aes_fpga.primitives": 2, "aes_fpga.cores": 3, "aes_fpga.modes": 4,
    "aes_fpga.entropy": 4,
    "aes_fpga.appliance.gateware": 5, "aes_fpga.designs": 6, "aes_fpga.flow": 7,
    "aes_fpga.flow.tools": 7, "aes_fpga.flow.nextpnr": 7, "aes_fpga.flow.vivado": 7,
    "aes_fpga.flow.stages": 7, "aes_fpga.flow.report": 7, "aes_fpga.flow.templates": 7,
    "aes_fpga.export": 9,
    "aes_fpga.boards": 8, "aes_fpga.flow.build": 9, "aes_fpga.flow.route": 9,
    "aes_fpga.flow.compare": 9,
    "aes_fpga.sim": 9,
    "aes_fpga.commands": 10, "aes_fpga.protocol": 10,
    "aes_fpga.cli": 11, "aes_fpga.__main__": 11,
}

# The host side: what `aes-fpga encrypt` loads before it talks to a device (the command line
# itself included: every command module is imported to assemble the parser).
HOST_SIDE = ["aes_fpga.model", "aes_fpga.gcm_model", "aes_fpga.cmac_model", "aes_fpga.keywrap",
             "aes_fpga.params",
             "aes_fpga.ticker",
             "aes_fpga.cli",
             *(f"aes_fpga.appliance.{m}" for m in
               ("spec", "errors", "cobs", "frame", "messages", "gcm", "reference", "client",
                "addresses", "udp_client", "links", "session_spec", "sessions", "session_host",
                "device_key")),
             "aes_fpga.commands",
             *(f"aes_fpga.commands.{m}" for m in ("options", "common", "crypt", "device", "keys"))]
HOST_THIRD_PARTY = {"tqdm", "serial", "cryptography"}


def modules():
    """(module name, path) of every module of the package, the board modules included."""
    for path in sorted(ROOT.rglob("*.py")):
        yield _name(path.relative_to(ROOT.parent)), path
    for path in sorted(BOARDS.glob("*.py")):
        yield _name(Path("aes_fpga/boards") / path.relative_to(BOARDS)), path


def _name(rel):
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _module_names():
    return frozenset(name for name, _ in modules())


def _is_module(name):
    return name in _module_names()


def imports(name, path):
    """Absolute names of everything module ``name`` imports (at any level of its code)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield sub if _is_module(sub) else module


def rank(name):
    while name not in RANKS:
        name = name.rpartition(".")[0]
    return RANKS[name]


def test_every_module_has_a_layer():
    names = [name for name, _ in modules()]
    assert len(names) > 30
    for name in names:
        assert rank(name) >= 0, name


def test_no_module_imports_from_a_layer_above():
    upward = []
    for name, path in modules():
        for target in imports(name, path):
            if target.split(".")[0] == "aes_fpga" and rank(target) > rank(name):
                upward.append(f"{name} (layer {rank(name)}) imports {target} "
                              f"(layer {rank(target)})")
    assert upward == []


def test_host_side_needs_no_hdl():
    paths = dict(modules())
    for name in HOST_SIDE:
        third_party = {t.split(".")[0] for t in imports(name, paths[name])
                       if t.split(".")[0] != "aes_fpga"}
        third_party -= set(__import__("sys").stdlib_module_names)
        assert third_party <= HOST_THIRD_PARTY, (name, third_party)


def import_circles(graph):
    """Every circle of imports in ``graph`` (module -> the modules it imports), each once, as
    the list of its modules starting from the smallest name."""
    circles = set()

    def visit(name, path):
        for target in sorted(graph.get(name, ())):
            if target in path:
                circle = path[path.index(target):]
                start = circle.index(min(circle))
                circles.add(tuple(circle[start:] + circle[:start]))
            elif target not in seen:
                visit(target, path + [target])
        seen.add(name)

    seen = set()
    for name in sorted(graph):
        if name not in seen:
            visit(name, [name])
    return sorted(circles)


def test_no_import_circle():
    """No module imports one that imports it back, at any distance, within a layer too (the
    layers alone allow it there): a module's dependencies are then a tree one can read bottom
    up."""
    names = dict(modules())
    graph = {name: {t for t in imports(name, path) if t in names and t != name}
             for name, path in names.items()}
    assert import_circles(graph) == []
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


def test_host_links_open_without_the_simulator():
    """The model, a UDP socket and a serial port open without loading the simulated link (nor
    Amaranth): only ``sim`` loads it."""
    import subprocess
    import sys
    code = ("import sys; from aes_fpga.appliance.links import open_link; "
            "open_link('model').close(); open_link('udp://127.0.0.1:9').close()\n"
            "try: open_link('/dev/aes-fpga-no-such-port')\n"
            "except Exception as e: assert type(e).__name__ == 'LinkError', e\n"
            "print(sorted(m for m in sys.modules if m.startswith(('amaranth', 'aes_fpga.sim'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_layer_test_sees_an_upward_import(tmp_path):
    # The checker itself: a made-up core module importing the CLI is reported.
    fake = tmp_path / "fake.py"
    fake.write_text("from ..cli import main\nfrom . import interface\n")
    found = list(imports("aes_fpga.cores.fake", fake))
    assert found == ["aes_fpga.cli", "aes_fpga.cores.interface"]
    assert rank("aes_fpga.cli") > rank("aes_fpga.cores.fake")


def test_packages_listed_in_pyproject_are_the_folders():
    import tomllib
    config = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {_name(p.relative_to(ROOT.parent)) for p in ROOT.rglob("__init__.py")}
    assert listed == folders | {"aes_fpga.boards"}


def test_public_api_resolves_from_the_documented_places():
    """Every name the lazy package namespaces promise loads, from the module that defines
    it, and each host-side protocol module's public names are all offered."""
    import importlib

    from aes_fpga import appliance, cores

    for package in (appliance, cores):
        for name in package.__all__:
            value = getattr(package, name)
            assert value is not None, f"{package.__name__}.{name}"
    for module in ("spec", "errors", "cobs", "frame", "messages", "reference", "client"):
        mod = importlib.import_module(f"aes_fpga.appliance.{module}")
        missing = set(mod.__all__) - set(appliance.__all__)
        assert missing == set(), (module, missing)
    from aes_fpga.appliance import Device, UartAppliance  # noqa: F401
    from aes_fpga.cores import DrabLocus, make_core
    assert cores.core_class("drab-locus") is DrabLocus
    assert make_core.__module__ == "aes_fpga.cores"
