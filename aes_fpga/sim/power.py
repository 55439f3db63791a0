"""A toggle-count power proxy: switching activity of a design, counted in simulation.

Dynamic power is, signal by signal, capacitance x toggles x V^2 x f; with no capacitances (no
routed netlist here), the number of bit toggles under a realistic stimulus is the part a
design decision changes. :func:`subbytes_toggles` runs the SubBytes accelerator
(:mod:`aes_fpga.cores.subbytes_accelerator`) under the traffic of a soft CPU and counts:

- data toggles: every bit change of every signal of the design (Amaranth's simulator, zero
  delay, so glitches are not counted), read back from the simulation's VCD trace, each signal
  once however many scopes show it (a structured port's fields are its signal's bits: not
  counted again); the clock is left out and counted apart;
- clock edges at the result register: the rising edges its flip-flops receive, register bits x
  clocked cycles. With clock gating (BUFGCE) only the cycles a word is taken are clocked; the
  baseline register is clocked every cycle. (The portable clock-enable model simulated here
  keeps its clock running; this count is what the 7-series gate lets through.)

These are the design's signals, not the mapped netlist's: the netlist's LUT-internal nodes would
add toggles of their own, but operand isolation silences the S-box's inputs, so every node
behind them is quiet too whatever the mapping.
"""

import random
import re
import tempfile
from pathlib import Path

__all__ = ["subbytes_toggles", "vcd_toggles"]

_VAR = re.compile(r"\$var\s+\S+\s+(\d+)\s+(\S+)\s+(\S+)(?:\s+\[[^\]]*\])?\s+\$end")


def vcd_toggles(text):
    """``{name: bit toggles}`` of a VCD trace: for each variable code, the bits that changed at
    each value change after the first (the initial dump). A code shown in several scopes counts
    once, under its first full name (``scope.name``)."""
    names, scope = {}, []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("$scope"):
            scope.append(line.split()[2])
        elif line.startswith("$upscope"):
            scope.pop()
        elif line.startswith("$var"):
            m = _VAR.match(line)
            if m and m[2] not in names:
                names[m[2]] = ".".join([*scope, m[3]])
        elif line.startswith("$enddefinitions"):
            break
    body = text[text.index("$enddefinitions"):]
    last, toggles = {}, dict.fromkeys(names.values(), 0)
    for line in body.splitlines()[1:]:
        line = line.strip()
        if not line or line[0] in "#$":
            continue
        if line[0] in "bB":
            bits, code = line[1:].split()
        else:
            bits, code = line[0], line[1:]
        if code not in names:
            continue
        value = int(bits.replace("x", "0").replace("z", "0"), 2)
        if code in last:
            toggles[names[code]] += bin(last[code] ^ value).count("1")
        last[code] = value
    return toggles


def subbytes_toggles(*, low_power, lanes=4, cycles=2000, duty=0.22, read_ready=0.8, seed=1):
    """Simulate the accelerator for ``cycles`` cycles of soft-CPU traffic and count its
    switching activity (see the module docstring).

    Traffic (seeded, the same for both variants): the CPU's bus word changes every cycle it
    carries no request (other traffic); a request (a new random word, held until taken) is
    presented on a fraction ``duty`` of those cycles (the paper measures SubBytes busy 22 % of
    the time); the CPU reads a result on a fraction ``read_ready`` of the cycles. Every result
    is checked against the model's S-box.

    Returns a dict: ``words`` taken, ``data_toggles`` (sum), ``toggles`` (by signal),
    ``sbox_input_toggles``, ``sbox_output_toggles``, ``register_clock_edges``.
    """
    from amaranth.sim import Simulator

    from ..cores.subbytes_accelerator import SubBytesAccelerator, sub_word

    if not 0 <= duty <= 1 or not 0 < read_ready <= 1:
        raise ValueError(f"duty {duty!r} / read_ready {read_ready!r}: allowed 0 <= duty <= 1, "
                         f"0 < read_ready <= 1")
    if not isinstance(cycles, int) or not 1 <= cycles <= 1_000_000:
        raise ValueError(f"cycles: {cycles!r} is out of range; allowed 1 to 1000000")
    dut = SubBytesAccelerator(lanes=lanes, low_power=low_power)
    rng = random.Random(seed)
    sent, got = [], []

    async def cpu(ctx):
        valid, word = False, 0
        for _ in range(cycles):
            if not valid:
                word = rng.getrandbits(8 * lanes)
                valid = rng.random() < duty
            ready = rng.random() < read_ready
            ctx.set(dut.req.valid, valid)
            ctx.set(dut.req.payload, {"data": word})
            ctx.set(dut.resp.ready, ready)
            *_, req_ready, resp_valid, resp = await ctx.tick().sample(
                dut.req.ready, dut.resp.valid, dut.resp.payload)
            if resp_valid and ready:
                got.append(resp.data)
            if valid and req_ready:
                sent.append(word)
                valid = False

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(cpu)
    with tempfile.TemporaryDirectory(prefix="aes-power-") as folder:
        vcd = Path(folder) / "trace.vcd"
        with sim.write_vcd(vcd_file=str(vcd)):
            sim.run()
        toggles = vcd_toggles(vcd.read_text())
    expected = [sub_word(w, lanes) for w in sent[:len(got)]]
    if got != expected:
        bad = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        raise RuntimeError(f"result {bad}: {got[bad]:#x}, expected {expected[bad]:#x}")
    # The trace shows a data.View's fields beside the signal holding them (`req__payload` and
    # `\req__payload.data`): the same bits, counted once, as the signal.
    data_toggles = {n.removeprefix("bench."): t for n, t in toggles.items()
                    if "\\" not in n and n.split(".")[-1] != "clk"}

    def group(leaf):
        return sum(t for n, t in data_toggles.items() if n.rsplit(".", 1)[-1] == leaf)

    # Clocked cycles of the result register: those a word is taken (gated) or all of them.
    clocked = len(sent) if low_power else cycles
    return {"low_power": low_power, "lanes": lanes, "cycles": cycles, "duty": duty,
            "read_ready": read_ready, "seed": seed, "words": len(sent), "checked": len(got),
            "data_toggles": sum(data_toggles.values()),
            "sbox_input_toggles": group("sbox_in"), "sbox_output_toggles": group("sbox_out"),
            "register_clock_edges": 8 * lanes * clocked,
            "toggles": dict(sorted(data_toggles.items()))}
