"""How the post-synthesis simulation reads a netlist's outputs: bit by bit, so an undefined (x/z)
bit makes only its own output undefined, never a neighbour sharing a hex digit with it."""

import pytest
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from aes_fpga.flow.postsynth import find_iverilog, output_fields, simulate_netlist
from aes_fpga.flow.synth import DEFAULT_PART, SynthResult, Utilization
from aes_fpga.sim.cxxsim import mark_used


def test_output_fields_first_output_in_the_low_bits():
    assert output_fields("1010" "011", {"v": 3, "d": 4}) == {"v": 0b011, "d": 0b1010}


def test_output_fields_undefined_bits_stay_in_their_output():
    assert output_fields("xxxxxxx1", {"v": 1, "d": 7}) == {"v": 1, "d": None}
    assert output_fields("0000001z", {"v": 1, "d": 7}) == {"v": None, "d": 1}


@pytest.mark.parametrize("line", ["0101", "01", "0a0", "x 1"])
def test_output_fields_refuses_malformed_lines(line):
    with pytest.raises(ValueError, match="binary digits"):
        output_fields(line, {"v": 1, "d": 2})


class _Pair(wiring.Component):
    """Stands for a synthesized design: the netlist below is its "synthesis"."""
    a: In(3)
    v: Out(1)
    d: Out(7)

    def elaborate(self, platform):
        raise AssertionError("only its ports are used")


# v follows a[0]; d is all x but for its top bit: in hex, v's digit would read X.
_NETLIST = """module top(a, v, d);
  input [2:0] a;
  output v;
  output [6:0] d;
  assign v = a[0];
  assign d = {a[2], 6'bxxxxxx};
endmodule
"""


@pytest.mark.skipif(find_iverilog() is None, reason="Icarus Verilog is not installed")
def test_netlist_outputs_read_bit_by_bit(tmp_path):
    (tmp_path / "netlist.v").write_text(_NETLIST)
    synth = SynthResult(part=DEFAULT_PART, total=Utilization(), workdir=tmp_path)
    stim = [{"a": 0b001}, {"a": 0b100}, {"a": 0b101}]
    # the netlist is given: the components are never elaborated
    pairs = [_Pair(), _Pair()]
    for pair in pairs:
        mark_used(pair)
    assert simulate_netlist(pairs[0], stim, synth=synth, undefined="none") == [
        {"v": 1, "d": None}, {"v": 0, "d": None}, {"v": 1, "d": None}]
    with pytest.raises(ValueError, match="undefined bits at cycle 0: d in"):
        simulate_netlist(pairs[1], stim, synth=synth)
