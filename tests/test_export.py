"""``aes-fpga export``: the file it writes (one top module named after the configuration, every
module below it prefixed with that name, a header saying what it is), the JSON of its ports
against the Verilog's own declarations, two exports in one compilation, and its refusals."""

import json
import re
import shutil
import subprocess

import pytest

from aes_fpga.cli import main
from aes_fpga.cores import make_core
from aes_fpga.export.verilog import top_name


def export(tmp_path, *args, out="out"):
    assert main(["export", *args, "-o", str(tmp_path / out)]) == 0
    (v,) = (tmp_path / out).glob("*.v")
    return v, json.loads(v.with_suffix(".json").read_text())


def declared_ports(text, module):
    """``{name: (direction, width)}`` of ``module``'s port declarations in ``text``."""
    body = re.search(rf"^module {module}\(.*?\);(.*?)^endmodule", text, re.M | re.S).group(1)
    return {name: (d, int(msb) + 1 if msb else 1) for d, msb, name in re.findall(
        r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M)}


@pytest.mark.parametrize("interface", ["axis", "native"])
def test_json_describes_the_ports_of_the_verilog(tmp_path, interface):
    verilog, info = export(tmp_path, "--core", "compact8", "--key-sizes", "128,256",
                           "--key-slots", "2", "--interface", interface)
    name = top_name("compact8", (128, 256), 2, 8, interface=interface, vendor="portable")
    assert info["top"] == name == verilog.stem
    text = verilog.read_text()
    assert declared_ports(text, name) == {
        p["name"]: (p["direction"], p["width"]) for p in info["ports"]}
    for port in info["ports"]:
        if "fields" in port:
            assert sum(f["width"] for f in port["fields"]) == port["width"]
    core = make_core("compact8", key_sizes=(128, 256))
    assert info["latency"] == {"128": core.latency(128), "256": core.latency(256)}
    core.key_rejected  # noqa: B018 (read only)
    from aes_fpga.sim.cxxsim import mark_used
    mark_used(core)
    # Every module below the top carries its name.
    modules = re.findall(r"^module (\w+)", text, re.M)
    assert modules[0] == name or name in modules
    assert all(m == name or m.startswith(name + "__") for m in modules) and len(modules) > 2
    header = text.split("\n/*", 1)[0]
    assert f"latency (cycles from a request accepted to its result valid): AES-128 " \
           f"{core.latency(128)}, AES-256 {core.latency(256)}" in header
    assert info["command"] in header and "aes-fpga synth --core compact8" in header


def test_axis_ports_in_the_documented_widths(tmp_path):
    _, info = export(tmp_path, "--core", "compact8", "--key-sizes", "128", "--key-slots", "4",
                     "--tag-width", "5")
    widths = {p["name"]: p["width"] for p in info["ports"]}
    assert widths["s_axis_key_tdata"] == 256 and widths["s_axis_tdata"] == 128
    assert widths["s_axis_key_tuser"] == 3 + 2 and widths["s_axis_tuser"] == 1 + 2
    assert widths["s_axis_tid"] == widths["m_axis_tid"] == 5
    assert info["reset"] == {"port": "aresetn", "active": "low", "synchronous": True}


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")
def test_two_exports_compile_together(tmp_path):
    """Two configurations of one core in one Icarus Verilog compilation: no module is
    declared twice (the same export twice is refused, so the check can fail)."""
    a, _ = export(tmp_path, "--core", "compact8", "--key-sizes", "128", out="a")
    b, _ = export(tmp_path, "--core", "compact8", "--key-sizes", "128,256", out="b")
    ok = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "ab"), str(a), str(b)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    twice = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "aa"), str(a), str(a)],
                           capture_output=True, text=True)
    assert twice.returncode != 0 and "already been declared" in twice.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--core", "drab-locus-datapath"], "has no key stream"),
    (["--core", "compact8", "--key-slots", "65"], "key_slots: 65 is out of range"),
    (["--core", "compact8", "--tag-width", "-1"], "tag_width: -1 is out of range"),
])
def test_refusals_write_nothing(tmp_path, capsys, args, message):
    assert main(["export", *args, "-o", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_bad_choices_are_argparse_errors(tmp_path):
    for bad in (["--vendor", "altera"], ["--interface", "axi4"], ["--core", "nope"]):
        with pytest.raises(SystemExit) as e:
            main(["export", *bad, "-o", str(tmp_path)])
        assert e.value.code == 2


def test_mode_engine_export(tmp_path):
    """The core in the mode engine, with its own ports: the message stream's fields in the
    JSON as in the Verilog, and no GCM without ``--ghash``; behind AXI4-Stream ports, the
    fields in tuser."""
    verilog, info = export(tmp_path, "--core", "compact8", "--key-sizes", "128", "--design",
                           "modes", "--interface", "native")
    assert info["top"].endswith("_modes_native_portable") and info["design"] == "modes"
    # the engine has no tag port, and its name says so
    assert info["top"] == "aes_compact8_k128_s1_t0_modes_native_portable"
    assert info["tag_width"] == 0
    assert declared_ports(verilog.read_text(), info["top"]) == {
        p["name"]: (p["direction"], p["width"]) for p in info["ports"]}
    fields = {f["name"] for p in info["ports"] if p["name"] == "i__payload"
              for f in p["fields"]}
    assert {"data", "first", "mode", "op"} <= fields
    assert info["mode_codes"] == {"ECB": 0, "CBC": 1, "CTR": 2} and "gcm" not in info
    verilog, axis = export(tmp_path, "--core", "compact8", "--key-sizes", "128", "--design",
                           "modes", out="axis")
    assert axis["top"].endswith("_modes_axis_portable")
    ports = {p["name"]: p for p in axis["ports"]}
    assert declared_ports(verilog.read_text(), axis["top"]) == {
        n: (p["direction"], p["width"]) for n, p in ports.items()}
    assert [f["name"] for f in ports["s_axis_tuser"]["fields"]] == ["first", "mode", "op"]
    assert "m_axis_tuser" not in ports and ports["s_axis_tdata"]["width"] == 128


def test_native_export_of_the_datapath(tmp_path):
    _, info = export(tmp_path, "--core", "drab-locus-datapath", "--key-sizes", "128",
                     "--interface", "native")
    names = [p["name"] for p in info["ports"]]
    assert names[:2] == ["clk", "rst"] and "rk__payload" in names and "lock" in names


def test_mode_engine_export_with_gcm(tmp_path, capsys):
    """``--ghash``: the engine with GCM, named for its GHASH; the JSON lists the GCM fields
    of both streams and the beats, the header says GCM; GCM outside the engine is refused."""
    verilog, info = export(tmp_path, "--core", "compact8", "--key-sizes", "128", "--design",
                           "modes", "--interface", "native", "--ghash", "lut",
                           "--ghash-digit", "4")      # not the default 8; the quickest digit
    assert info["top"].endswith("_modes_gcmlut4_native_portable")
    assert declared_ports(verilog.read_text(), info["top"]) == {
        p["name"]: (p["direction"], p["width"]) for p in info["ports"]}
    fields = {p["name"]: {f["name"]: f for f in p["fields"]} for p in info["ports"]
              if "fields" in p}
    assert {"aad", "final", "nbytes"} <= set(fields["i__payload"])
    assert fields["i__payload"]["nbytes"]["width"] == 5
    assert "auth_ok" in fields["o__payload"] and "description" in fields["o__payload"]["auth_ok"]
    assert info["mode_codes"]["GCM"] not in (0, 1, 2)
    assert info["gcm"]["ghash"] == "lut" and info["gcm"]["digit"] == 4
    assert info["gcm"]["ghash_cycles_per_block"] == 128 // 4 + 1
    assert "--ghash lut --ghash-digit 4" in info["command"]
    head = verilog.read_text().split("\nmodule", 1)[0]
    assert "ECB, CBC, CTR, GCM)" in head and "GHASH lut (digit 4)" in head
    assert "synth --core compact8" in head and "--ghash lut" in head
    # without --ghash, no GCM: test_mode_engine_export
    assert main(["export", "--core", "compact8", "--ghash", "bram", "--interface", "native",
                 "-o", str(tmp_path / "core")]) == 2
    assert "GCM is in the mode engine only" in capsys.readouterr().err
    assert not (tmp_path / "core").exists()


def test_always_blocks_run_at_time_zero(tmp_path):
    """Every module's time-0 trigger of its ``always @*`` blocks is set by ``initial #0``,
    not by an initializer (no event in SystemVerilog simulators)."""
    from aes_fpga.export.verilog import time_zero_events
    verilog, _ = export(tmp_path, "--core", "compact8", "--key-sizes", "128")
    text = verilog.read_text()
    triggers = re.findall(r"^\s*reg (\\\S*dump_module\$\d+) *(=?)", text, re.M)
    assert triggers and all(eq == "" for _, eq in triggers)
    assert len(re.findall(r"^\s*initial #0 \\\S*dump_module\$\d+ = 1'h0;", text, re.M)) == len(
        triggers)
    yosys = "  reg \\$auto$verilog_backend.cc:1:dump_module$3  = 0;\n"
    assert time_zero_events(yosys) == ("  reg \\$auto$verilog_backend.cc:1:dump_module$3 ;\n"
                                       "  initial #0 \\$auto$verilog_backend.cc:1:dump_module$3"
                                       " = 1'h0;\n")
