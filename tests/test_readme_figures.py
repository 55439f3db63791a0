"""The README's generated figures: marker parsing and replacement, ``--check``, and (slow) the
real README against what the commands print now."""

import subprocess
import sys
from pathlib import Path

import pytest
import readme_figures as rf  # tools/, put on the path by conftest.py

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"

DOC = """# Title

Prose before, with trailing spaces   \r
and a CRLF line.
<!-- figures:key-load begin: old command -->
old key-load body
<!-- figures:key-load end -->
Prose between.

<!-- figures:core-cycles begin: aes-fpga bench -->
| a | b |
|---|---|
<!-- figures:core-cycles end -->
Prose after, no final newline"""

NEW = {"key-load": ("new command", "new body line 1\nnew body line 2\n")}


def test_parse_finds_sections_in_order():
    spans = rf.parse_sections(DOC, rf.SECTIONS)
    assert [(s.name, s.command) for s in spans] == [("key-load", "old command"),
                                                    ("core-cycles", "aes-fpga bench")]
    lines = DOC.splitlines(keepends=True)
    assert lines[spans[0].begin].startswith("<!-- figures:key-load begin")
    assert lines[spans[0].end] == "<!-- figures:key-load end -->\n"


def test_missing_end_marker_is_an_error_naming_the_section():
    doc = DOC.replace("<!-- figures:key-load end -->\n", "")
    with pytest.raises(rf.FiguresError, match="'key-load'.*no end marker"):
        rf.parse_sections(doc, rf.SECTIONS)
    doc = DOC.replace("<!-- figures:core-cycles end -->\n", "")
    with pytest.raises(rf.FiguresError, match="'core-cycles'.*no end marker"):
        rf.parse_sections(doc, rf.SECTIONS)


def test_unknown_section_is_an_error():
    doc = DOC.replace("figures:key-load", "figures:no-such-table")
    with pytest.raises(rf.FiguresError, match="'no-such-table' is not known"):
        rf.parse_sections(doc, rf.SECTIONS)


@pytest.mark.parametrize("doc, message", [
    (DOC.replace("<!-- figures:key-load begin: old command -->\n", ""),
     "end marker of section 'key-load' without its begin"),
    (DOC.replace("figures:core-cycles", "figures:key-load"), "'key-load' is marked twice"),
    (DOC.replace("<!-- figures:key-load end -->", "<!-- figures:key-load end: x -->"),
     "names a command"),
    (DOC.replace("<!-- figures:key-load end -->", "<!-- figures:key-load stop -->"),
     "malformed figures marker"),
])
def test_malformed_markers_are_errors(doc, message):
    with pytest.raises(rf.FiguresError, match=message):
        rf.parse_sections(doc, rf.SECTIONS)


def test_replacement_keeps_everything_outside_the_markers():
    out = rf.replace_sections(DOC, NEW, rf.SECTIONS)
    begin = "<!-- figures:key-load begin: "
    head, rest = DOC.split(begin)
    old_tail = rest.split("old key-load body\n", 1)[1]
    assert out == (head + begin + "new command -->\nnew body line 1\nnew body line 2\n"
                   + old_tail)
    assert out.startswith(head) and out.endswith(old_tail)     # byte for byte, CRLF included
    # Idempotent, and an unchanged section leaves the text as it was.
    assert rf.replace_sections(out, NEW, rf.SECTIONS) == out
    same = {"core-cycles": ("aes-fpga bench", "| a | b |\n|---|---|\n")}
    assert rf.replace_sections(DOC, same, rf.SECTIONS) == DOC


def test_replacing_an_absent_section_is_an_error():
    with pytest.raises(rf.FiguresError, match="no section 'primitives'"):
        rf.replace_sections(DOC, {"primitives": ("c", "b\n")}, rf.SECTIONS)


def _main(tmp_path, argv, sections, capsys):
    readme = tmp_path / "README.md"
    readme.write_bytes(DOC.encode())
    status = rf.main(["--readme", str(readme), *argv], sections=sections)
    return status, readme.read_bytes().decode(), capsys.readouterr()


def test_check_fails_on_a_difference_and_writes_nothing(tmp_path, capsys):
    status, text, out = _main(tmp_path, ["--check", "--only", "key-load"], NEW, capsys)
    assert status == 1
    assert text == DOC
    assert "-old key-load body" in out.out and "+new body line 1" in out.out
    assert "key-load" in out.err


def test_check_lists_every_differing_section(tmp_path, capsys):
    sections = {**NEW, "core-cycles": ("aes-fpga bench", "| c |\n")}
    status, _, out = _main(tmp_path, ["--check", "--only", "key-load", "core-cycles"], sections,
                           capsys)
    assert status == 1
    assert "section key-load" in out.out and "section core-cycles" in out.out
    assert "key-load, core-cycles" in out.err


def test_check_passes_when_equal(tmp_path, capsys):
    same = {"core-cycles": ("aes-fpga bench", "| a | b |\n|---|---|\n")}
    status, text, _ = _main(tmp_path, ["--check", "--only", "core-cycles"], same, capsys)
    assert status == 0 and text == DOC


def test_writing_rewrites_only_the_named_sections(tmp_path, capsys):
    status, text, _ = _main(tmp_path, ["--only", "key-load"], NEW, capsys)
    assert status == 0
    assert text == rf.replace_sections(DOC, NEW, rf.SECTIONS)


def test_a_section_missing_from_the_readme_is_an_error(tmp_path, capsys):
    status, text, out = _main(tmp_path, ["--check"], {}, capsys)     # all sections asked for
    assert status == 2 and text == DOC
    assert "no section 'toolchain'" in out.err


def test_the_readme_marks_every_section_once():
    spans = rf.parse_sections(README.read_text(encoding="utf-8"), rf.SECTIONS)
    assert sorted(s.name for s in spans) == sorted(rf.SECTIONS)


def test_key_load_sentence_is_current(capsys):
    assert rf.main(["--check", "--only", "key-load"]) == 0, capsys.readouterr().out


def test_protocol_sentence_is_current(capsys):
    """The protocol version and commands the README names are the spec's (through the
    reference device: no gateware, no simulator)."""
    assert rf.main(["--check", "--only", "protocol"]) == 0, capsys.readouterr().out


def _current_row(row, name):
    text = README.read_text(encoding="utf-8")
    span = next(s for s in rf.parse_sections(text, rf.SECTIONS) if s.name == name)
    return rf.table_row(row) in rf.section_text(text, span).splitlines()


@pytest.mark.slow
def test_ethernet_bench_mii_row_is_current(tmp_path):
    """The README's MII row of the Ethernet appliance's throughput and round trip: 1 MiB
    through the compiled simulation (about 30 s). The default run benches the same appliance
    on the same simulator with 48 datagrams and holds it to the same ceiling
    (tests/test_eth_appliance_sim.py::test_bench_reaches_the_wire_format_ceiling); the RMII
    row is checked with every other figure by the slow test below."""
    from aes_fpga.sim.cxxsim import find_cxx
    if find_cxx() is None:
        pytest.skip("needs the compiled simulator (no C++ compiler)")
    mii = rf.ETHERNET_BENCHES[0]
    assert "--phy" not in mii
    assert _current_row(rf.ethernet_bench_row(rf.Runner(tmp_path), mii), "ethernet-bench")


@pytest.mark.slow
def test_mode_rates_are_current(capsys):
    """Every mode's cycles through the ``--port sim`` engine and the Ethernet appliance, 16 KiB
    each (about 20 s of compiled simulation): the README's figures. The same modes at 4 KiB,
    with the bounds they must keep:
    tests/test_appliance_layers.py::test_every_mode_rate_through_both_appliances (also slow)."""
    from aes_fpga.sim.cxxsim import find_cxx
    if find_cxx() is None:
        pytest.skip("needs the compiled simulator (no C++ compiler)")
    assert rf.main(["--check", "--only", "mode-rates"]) == 0, capsys.readouterr().out


def test_export_ports_are_current(capsys):
    # One export, about a second: the port table and figures of "Using a core from Verilog".
    assert rf.main(["--check", "--only", "export-ports", "export-wave"]) == 0, \
        capsys.readouterr().out


def test_aes128_cycles_row_is_current(tmp_path):
    # The cheapest real figure (one ~5 s simulation): the AES-128 row of the cycles table.
    assert _current_row(rf.cycles_row(rf.Runner(tmp_path), 128), "core-cycles")


@pytest.mark.slow
def test_readme_figures_are_current():
    # Every deterministic figure: Yosys ten times and the serial-appliance simulation.
    proc = subprocess.run([sys.executable, "tools/readme_figures.py", "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, (
        f"README figures differ from what the commands print now (run python "
        f"tools/readme_figures.py):\n{proc.stdout}\n{proc.stderr[-3000:]}")
