"""The design rule of the BRAM/DSP cores, as a test: at most 2 LUT levels between registers.

Levels are counted by :func:`aes_fpga.flow.timing.analyse_netlist` on the flattened 7-series
netlist that :func:`aes_fpga.flow.synth.synthesize` makes (ports count as registers: a design
holding the core registers them). A carry chain of up to 4 CARRY4 may stand beside the LUTs.
The core configurations are the ones ``aes-fpga timing --core drab-locus --key-sizes 128`` (and
``tests/test_timing.py``) and ``aes-fpga timing --core ttable-unrolled --key-sizes 128 --part
xc7a200tsbg484-1`` report, so the synthesis cache serves both.
"""

import pytest
from synth_batch import assert_batch_depths_equal_single_runs, depth_reports

from aes_fpga.cores import make_core
from aes_fpga.cores.key_schedule import KeySchedule
from aes_fpga.flow.synth import DEFAULT_PART, synthesize
from aes_fpga.flow.timing import analyse_netlist

#: LUT levels allowed between two registers, and CARRY4 cells in a chain beside them.
RULE_LEVELS = 2
RULE_CARRY4 = 4


def _violations(report):
    """The paths and carry chains of an analysis report that break the rule."""
    assert report.end_points > 0 and report.paths
    deep = [f"{p.levels} levels: {p.start} -> {p.end}" for p in report.paths
            if p.levels > RULE_LEVELS]
    long = [f"{c['length']} CARRY4 ({c['net'] or c['source']})" for c in report.carry_chains
            if c["length"] > RULE_CARRY4]
    return deep + long


def _too_deep(component, part=DEFAULT_PART):
    return _violations(analyse_netlist(synthesize(component, part).netlist_json, worst=1000))


def batch_designs():
    """The default run's designs but DRAB-LOCUS (whose synthesis ``aes-fpga timing`` shares
    through the cache), by case name."""
    return {
        "key_schedule": KeySchedule(key_slots=4, key_sizes=(128, 192, 256)),
        "ttable_round": make_core("ttable-round", key_slots=1, key_sizes=(128,), tag_width=8),
        "ttable_basic": make_core("ttable-basic", key_slots=1, key_sizes=(128,), tag_width=8),
        "ttable_unrolled_3": make_core("ttable-unrolled", key_slots=1, key_sizes=(128,),
                                       tag_width=8, unroll=3),
    }


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Each of :func:`batch_designs` analysed from one Yosys run (tests/synth_batch.py: each a
    module of its own, flattened inside and mapped alone, as its own run would be;
    ``test_batch_depths_equal_single_runs`` holds that)."""
    return depth_reports(batch_designs(), tmp_path_factory.mktemp("depth-batch"))


def test_key_schedule_alone_keeps_the_rule(batch):
    """All key lengths and four slots: every counter, flag and InvMixColumns term."""
    assert _violations(batch["key_schedule"]) == []


def test_drab_locus_core_keeps_the_rule():
    """AES-128, one key slot (the paper's configuration): key schedule, admission, round-key
    writes, the ring's control and the output FIFO."""
    assert _too_deep(make_core("drab-locus", key_slots=1, key_sizes=(128,), tag_width=8)) == []


@pytest.mark.slow
def test_drab_locus_core_with_every_key_length_keeps_the_rule():
    assert _too_deep(make_core("drab-locus", key_slots=1, tag_width=8)) == []


@pytest.mark.parametrize("name", ["ttable-round", "ttable-basic"])
def test_ttable_ring_cores_keep_the_rule(batch, name):
    """AES-128, one key slot (what ``aes-fpga timing --core NAME --key-sizes 128`` reports):
    admission, round-key writes and initial-key reads on one block RAM port, the entry switch,
    the inverse cipher's row switches. Admission that compared the blocks in flight plus the
    output FIFO's level with its depth was 3 levels deep."""
    assert _violations(batch[name.replace("-", "_")]) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ttable-round", "ttable-basic"])
def test_ttable_ring_cores_with_every_key_length_keep_the_rule(name):
    assert _too_deep(make_core(name, key_slots=1, tag_width=8)) == []


@pytest.mark.slow
def test_ttable_unrolled_core_keeps_the_rule():
    """AES-128, one key slot, all ten round stages (the configuration ``aes-fpga timing --core
    ttable-unrolled --key-sizes 128 --part xc7a200tsbg484-1`` reports; the xc7a35t has too few
    block RAMs): admission of a block per cycle, the round-key writes into every stage's LUT
    RAM, the output FIFO. A round-key write decoded with a division by the stage count was 12
    levels deep. About 25 s of Yosys, so with -m slow: the default run holds the same
    constructs in three stages (the test below), whose blocks also loop."""
    core = make_core("ttable-unrolled", key_slots=1, key_sizes=(128,), tag_width=8)
    assert _too_deep(core, "xc7a200tsbg484-1") == []


def test_ttable_unrolled_core_with_looping_blocks_keeps_the_rule(batch):
    """Three stages, so AES-128 blocks pass them several times (pass counter, final-pass test,
    round-key places other than a power of two)."""
    assert _violations(batch["ttable_unrolled_3"]) == []


@pytest.mark.slow
def test_ttable_unrolled_core_with_every_key_length_keeps_the_rule():
    """Fourteen stages, AES-128/192/256 blocks entering at three of them."""
    core = make_core("ttable-unrolled", key_slots=1, tag_width=8)
    assert _too_deep(core, "xc7a200tsbg484-1") == []


@pytest.mark.slow
def test_batch_depths_equal_single_runs(batch):
    """The batch measures what one ``synthesize()`` per design measures."""
    assert_batch_depths_equal_single_runs(batch_designs(), batch)
