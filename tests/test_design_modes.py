# amaranth: UnusedElaboratable=no
"""The ``modes`` design (the core in the mode engine, GCM with ``--ghash``) and the ``--ghash``
option, declared once for ``synth``, ``timing`` and ``bench``."""

import pytest

from aes_fpga.cli import build_parser, main
from aes_fpga.cores import make_core
from aes_fpga.designs.table import DESIGN_TABLE, DesignOptions
from aes_fpga.flow.synth import component_paths
from aes_fpga.modes import ModeEngine
from aes_fpga.params import GHASH_VARIANTS
from aes_fpga.sim.cxxsim import mark_used


def test_without_ghash_the_engine_has_no_gcm():
    entry = DESIGN_TABLE["modes"]
    top = entry.make(make_core("drab-locus", key_sizes=(128,)), DesignOptions())
    mark_used(top)          # made to be read, not built
    assert isinstance(top, ModeEngine) and top.ghash is None
    assert entry.what("drab-locus", DesignOptions()) == "mode engine around drab-locus"
    assert not entry.on_board


@pytest.mark.parametrize("variant", GHASH_VARIANTS)
def test_ghash_variant_reaches_the_engine_and_its_group(variant):
    entry = DESIGN_TABLE["modes"]
    options = DesignOptions(gcm=variant, ghash_digit=4)      # not the default 8; quick to make
    top = entry.make(make_core("drab-locus", key_sizes=(128,)), options)
    mark_used(top)          # made to be read, not built
    assert top.ghash is not None
    assert top.ghash.cycles_per_block == (8 if variant == "bram" else 128 // 4 + 1)
    groups = entry.resource_groups(top, lambda: component_paths(top))
    assert sorted(groups.values()) == ["GHASH", "core", "mode engine"]
    assert entry.what("x", options) == f"mode engine with GCM ({variant} GHASH) around x"


def test_ghash_option_is_one_declaration():
    parser = build_parser()
    for command, default in (("synth", "none"), ("timing", "none"), ("bench", "bram")):
        args = parser.parse_args([command])
        assert (args.ghash, args.ghash_digit) == (default, 8), command
    args = parser.parse_args(["synth", "--design", "modes", "--ghash", "lut",
                              "--ghash-digit", "16"])
    assert (args.design, args.ghash, args.ghash_digit) == ("modes", "lut", 16)


@pytest.mark.parametrize(("argv", "message"), [
    (["synth", "--ghash", "fast"], "argument --ghash: invalid choice: 'fast'"),
    (["synth", "--ghash", "lut", "--ghash-digit", "3"], "argument --ghash-digit: invalid choice"),
])
def test_bad_ghash_options_are_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_bench_refuses_gcm_without_a_ghash(capsys):
    assert main(["bench", "--mode", "gcm", "--ghash", "none"]) == 2
    assert "--ghash: none leaves GCM out; --mode gcm needs bram or lut" in capsys.readouterr().err


@pytest.mark.parametrize("design", ["uart", "ethernet"])
def test_appliances_offer_gcm_with_a_ghash(design):
    from aes_fpga.flow.build import ethernet_identity
    entry = DESIGN_TABLE[design]
    core = make_core("drab-locus", key_sizes=(128,))
    plain = entry.make(core, DesignOptions(identity=ethernet_identity()))
    gcm = entry.make(make_core("drab-locus", key_sizes=(128,)),
                     DesignOptions(identity=ethernet_identity(), gcm="bram"))
    mark_used(plain)
    mark_used(gcm)
    assert "GCM" not in [m.name for m in plain.info.modes]
    assert "GCM" in [m.name for m in gcm.info.modes]


def test_board_build_with_gcm(tmp_path):
    """``aes-fpga build --design uart --ghash bram``: the appliance on the board with GCM in its
    engine (the GHASH's block RAMs in the netlist), said in the report; a design without a mode
    engine refuses the option, naming it."""
    from aes_fpga.flow.build import build
    quiet = {"progress": lambda line: None, "build_root": tmp_path}
    r = build("ulx3s-85", design="uart", core="drab-locus", dry_run=True, ghash="bram",
              core_options={"key_sizes": (128,)}, **quiet)
    assert r.report["ghash"] == "bram" and r.report["status"] == "dry-run"
    assert "ghash" in (r.build_dir / "top.il").read_text()      # ECP5 trees hold RTLIL
    assert "- GCM in the engine, bram GHASH" in (r.build_dir / "report.md").read_text()
    with pytest.raises(ValueError, match=r"ghash \(--ghash\): design selftest has no mode "
                                         r"engine"):
        build("ulx3s-85", design="selftest", dry_run=True, ghash="bram", **quiet)
