"""Cycle-by-cycle comparison of a synthesized Xilinx netlist with the portable Amaranth model.

:func:`simulate_portable` runs a component in Amaranth's simulator; :func:`simulate_netlist` runs
the same component synthesized for a 7-series part (:mod:`aes_fpga.flow.synth`) in Icarus Verilog
with Yosys's Xilinx cell models. Both take one dictionary of input values per cycle and return one
dictionary of output values per cycle, sampled after the inputs are applied and before the clock
edge, so equal results mean equal values at equal cycles.

Yosys's ``cells_sim.v`` declares RAMB18E1/RAMB36E1 without any behaviour, so this module replaces
them with :func:`bram_models`, a behavioural model of the true-dual-port subset
:class:`aes_fpga.primitives.DualPortBRAM` instantiates (UG473: port widths 1/2/4/9/18/36, unused
address bits at the bottom, INIT/INITP layout, READ_FIRST/WRITE_FIRST/NO_CHANGE, EN, REGCE,
output register DO*_REG, RSTREG/RSTRAM to SRVAL). Byte-wide write enables of one port are taken
as one enable (bit 0), which is how the primitive drives them. DSP48E1 uses Yosys's own model.
BUFGCE, a black box there too, gets :data:`BUFGCE_MODEL`: the glitch-free gate of a 7-series
BUFGCE (CE captured while the clock is low, so an edge passes whole or not at all).

For an ECP5 part (``LFE5U-85F-6BG381``) the netlist comes from ``synth_ecp5`` and runs with
Yosys's ECP5 cell models (``share/ecp5/cells_sim.v``), in which DP16KD is again a black box:
:func:`dp16kd_model` gives it the behaviour DualPortBRAM relies on (widths 1/2/4/9/18, the
INITVAL layout of :func:`aes_fpga.primitives.bram.ecp5_init_offset`, CE, OCE, WE, REGMODE
NOREG/OUTREG, WRITEMODE NORMAL/WRITETHROUGH/READBEFOREWRITE; RST and chip selects are not
modelled and must be tied low), keeping Yosys's own port and parameter declarations.
"""

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from amaranth.hdl import ClockDomain, Module, Value
from amaranth.sim import Simulator

from .synth import DEFAULT_PART, synthesize
from .yosys import share_dir

__all__ = ["SimulatorMissing", "find_iverilog", "bram_models", "BUFGCE_MODEL", "dp16kd_model",
           "io_ports", "output_fields", "simulate_portable", "simulate_netlist", "cell_models"]


#: A behavioural BUFGCE for Icarus Verilog: CE is taken while I is low (a latch), and O is I
#: gated by it, so CE set up before a rising edge lets that edge through.
BUFGCE_MODEL = """module BUFGCE(output O, input CE, input I);
    parameter CE_TYPE = "SYNC";
    parameter [0:0] IS_CE_INVERTED = 1'b0;
    parameter [0:0] IS_I_INVERTED = 1'b0;
    parameter SIM_DEVICE = "7SERIES";
    parameter STARTUP_SYNC = "FALSE";
    reg enable = 1'b0;
    always @(I or CE) if (!I) enable = CE;
    assign O = I & enable;
endmodule
"""


class SimulatorMissing(RuntimeError):
    """No Verilog simulator (Icarus Verilog: ``iverilog`` and ``vvp``) is installed."""


def find_iverilog():
    """Paths of ``iverilog`` and ``vvp``, or ``None`` when Icarus Verilog is not installed."""
    iverilog, vvp = shutil.which("iverilog"), shutil.which("vvp")
    if iverilog is None or vvp is None:
        return None
    return iverilog, vvp


def io_ports(component):
    """``(inputs, outputs)``: lists of ``(name, value)`` of a component's top-level ports, named
    as Amaranth names them in the netlist (path joined with ``__``); structured ports (stream
    payloads) are given as their raw bits, so values are plain integers on both sides."""
    inputs, outputs = [], []
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        (inputs if member.flow.name == "In" else outputs).append((name, Value.cast(value)))
    return inputs, outputs


def simulate_portable(component, stimulus):
    """Run ``component`` (portable implementation) in Amaranth's simulator.

    ``stimulus`` is a list of ``{input name: value}`` (missing inputs keep their last value);
    returns one ``{output name: value}`` per cycle.
    """
    inputs, outputs = io_ports(component)
    ins = dict(inputs)
    results = []

    async def testbench(ctx):
        for vec in stimulus:
            for name, value in vec.items():
                ctx.set(ins[name], value)
            results.append({name: ctx.get(sig) for name, sig in outputs})
            await ctx.tick()

    # A wrapper that always has a sync domain, so purely combinational components step too.
    top = Module()
    top.domains.sync = ClockDomain()
    top.submodules.dut = component
    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


_PORT_RE = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?\\?([A-Za-z_][\w$]*)\s*;", re.M)


def _netlist_ports(netlist_text, top):
    """Ports of module ``top`` in a ``write_verilog -noattr`` netlist: ``{name: (dir, width)}``."""
    m = re.search(rf"^module {re.escape(top)}\s*\(.*?\);(.*?)^endmodule", netlist_text, re.M | re.S)
    if m is None:
        raise ValueError(f"module {top} not found in netlist")
    return {name: (d, int(msb) + 1 if msb else 1) for d, msb, name in _PORT_RE.findall(m.group(1))}


def _cells_without_bram(path):
    text = Path(path).read_text()
    for cell in ("RAMB18E1", "RAMB36E1"):
        text = re.sub(rf"^module {cell} \(.*?^endmodule\n", "", text, flags=re.M | re.S)
    return text


def bram_models():
    """Verilog behavioural models of RAMB18E1 and RAMB36E1 (true dual port)."""
    return _bram_model("RAMB18E1", abus=14, dbus=16, pbus=2, wea=2, web=4, ninit=64, ninitp=8,
                       extra="") + _bram_model(
        "RAMB36E1", abus=16, dbus=32, pbus=4, wea=4, web=8, ninit=128, ninitp=16,
        extra="""
    input CASCADEINA, input CASCADEINB, input INJECTDBITERR, input INJECTSBITERR,
    input REGCLKARDRCLK, input REGCLKB,
    output CASCADEOUTA, output CASCADEOUTB, output DBITERR, output SBITERR,
    output [7:0] ECCPARITY, output [8:0] RDADDRECC,""")


def _bram_model(name, *, abus, dbus, pbus, wea, web, ninit, ninitp, extra):
    inits = "\n".join(f"    parameter [255:0] INIT_{i:02X} = 256'h0;" for i in range(ninit))
    initps = "\n".join(f"    parameter [255:0] INITP_{i:02X} = 256'h0;" for i in range(ninitp))
    mem_cat = ", ".join(f"INIT_{i:02X}" for i in reversed(range(ninit)))
    memp_cat = ", ".join(f"INITP_{i:02X}" for i in reversed(range(ninitp)))
    # A RAMB36E1 has 15 address bits below its cascade bit; a RAMB18E1 uses all 14.
    amask = (1 << (15 if abus == 16 else 14)) - 1
    ports = []
    for x, X, clk, en, regce, rstram, rstreg, addr, we in (
            ("a", "A", "CLKARDCLK", "ENARDEN", "REGCEAREGCE", "RSTRAMARSTRAM", "RSTREGARSTREG",
             "ADDRARDADDR", "WEA"),
            ("b", "B", "CLKBWRCLK", "ENBWREN", "REGCEB", "RSTRAMB", "RSTREGB", "ADDRBWRADDR",
             "WEBWE")):
        ports.append(f"""
    reg [{dbus - 1}:0] lat_do_{x}, out_do_{x};
    reg [{pbus - 1}:0] lat_dop_{x}, out_dop_{x};
    initial begin
        {{lat_dop_{x}, lat_do_{x}}} = INIT_{X}; {{out_dop_{x}, out_do_{x}}} = INIT_{X};
    end
    assign DO{X}DO = DO{X}_REG ? out_do_{x} : lat_do_{x};
    assign DOP{X}DOP = DO{X}_REG ? out_dop_{x} : lat_dop_{x};
    always @(posedge {clk}) begin : port_{x}
        integer i, word, dw, pw, rw, ww;
        reg [{dbus - 1}:0] rd;
        reg [{pbus - 1}:0] rdp;
        if ({regce})
            {{out_dop_{x}, out_do_{x}}} <= {rstreg} ? SRVAL_{X} : {{lat_dop_{x}, lat_do_{x}}};
        if ({en}) begin
            rw = READ_WIDTH_{X}; ww = WRITE_WIDTH_{X};
            dw = data_bits(rw); pw = parity_bits(rw);
            word = (({addr} & {amask}) >> addr_shift(rw));
            rd = 0; rdp = 0;
            for (i = 0; i < dw; i = i + 1) rd[i] = mem[word * dw + i];
            for (i = 0; i < pw; i = i + 1) rdp[i] = memp[word * pw + i];
            if ({we}[0] && ww != 0) begin
                dw = data_bits(ww); pw = parity_bits(ww);
                word = (({addr} & {amask}) >> addr_shift(ww));
                for (i = 0; i < dw; i = i + 1) mem[word * dw + i] = DI{X}DI[i];
                for (i = 0; i < pw; i = i + 1) memp[word * pw + i] = DIP{X}DIP[i];
                if (WRITE_MODE_{X} == "WRITE_FIRST") begin
                    rd = 0; rdp = 0;
                    for (i = 0; i < dw; i = i + 1) rd[i] = DI{X}DI[i];
                    for (i = 0; i < pw; i = i + 1) rdp[i] = DIP{X}DIP[i];
                end
            end
            if ({rstram})
                {{lat_dop_{x}, lat_do_{x}}} <= SRVAL_{X};
            else if (!({we}[0] && ww != 0 && WRITE_MODE_{X} == "NO_CHANGE"))
                {{lat_dop_{x}, lat_do_{x}}} <= {{rdp, rd}};
        end
    end""")
    return f"""
module {name} (
    input CLKARDCLK, input CLKBWRCLK, input ENARDEN, input ENBWREN,
    input REGCEAREGCE, input REGCEB, input RSTRAMARSTRAM, input RSTRAMB,
    input RSTREGARSTREG, input RSTREGB,
    input [{abus - 1}:0] ADDRARDADDR, input [{abus - 1}:0] ADDRBWRADDR,
    input [{dbus - 1}:0] DIADI, input [{dbus - 1}:0] DIBDI,
    input [{pbus - 1}:0] DIPADIP, input [{pbus - 1}:0] DIPBDIP,
    input [{wea - 1}:0] WEA, input [{web - 1}:0] WEBWE,{extra}
    output [{dbus - 1}:0] DOADO, output [{dbus - 1}:0] DOBDO,
    output [{pbus - 1}:0] DOPADOP, output [{pbus - 1}:0] DOPBDOP
);
    parameter integer DOA_REG = 0;
    parameter integer DOB_REG = 0;
{inits}
{initps}
    parameter [{dbus + pbus - 1}:0] INIT_A = 0;
    parameter [{dbus + pbus - 1}:0] INIT_B = 0;
    parameter [{dbus + pbus - 1}:0] SRVAL_A = 0;
    parameter [{dbus + pbus - 1}:0] SRVAL_B = 0;
    parameter INIT_FILE = "NONE";
    parameter RAM_MODE = "TDP";
    parameter RAM_EXTENSION_A = "NONE";
    parameter RAM_EXTENSION_B = "NONE";
    parameter EN_ECC_READ = "FALSE";
    parameter EN_ECC_WRITE = "FALSE";
    parameter RDADDR_COLLISION_HWCONFIG = "DELAYED_WRITE";
    parameter integer READ_WIDTH_A = 0;
    parameter integer READ_WIDTH_B = 0;
    parameter integer WRITE_WIDTH_A = 0;
    parameter integer WRITE_WIDTH_B = 0;
    parameter RSTREG_PRIORITY_A = "RSTREG";
    parameter RSTREG_PRIORITY_B = "RSTREG";
    parameter SIM_COLLISION_CHECK = "ALL";
    parameter SIM_DEVICE = "7SERIES";
    parameter WRITE_MODE_A = "WRITE_FIRST";
    parameter WRITE_MODE_B = "WRITE_FIRST";

    reg [{ninit * 256 - 1}:0] mem;
    reg [{ninitp * 256 - 1}:0] memp;
    initial begin
        mem = {{{mem_cat}}};
        memp = {{{memp_cat}}};
    end

    function integer data_bits(input integer w);
        data_bits = (w == 36) ? 32 : (w == 18) ? 16 : (w == 9) ? 8 : w;
    endfunction
    function integer parity_bits(input integer w);
        parity_bits = (w == 36) ? 4 : (w == 18) ? 2 : (w == 9) ? 1 : 0;
    endfunction
    function integer addr_shift(input integer w);
        addr_shift = (w == 36) ? 5 : (w == 18) ? 4 : (w == 9) ? 3 : (w == 4) ? 2 : (w == 2) ? 1 : 0;
    endfunction
{"".join(ports)}
endmodule
"""


_DP16KD_BEHAVIOUR = """
    // Behaviour (aes_fpga.flow.postsynth.dp16kd_model): 1024 rows of 18 bits, each kept in
    // 20 bits of the INITVAL parameters.
    reg [20479:0] mem;
    integer k;
    initial begin
        mem = {INITVAL_3F_CAT};
    end
    function integer shift_of(input integer w);
        shift_of = (w == 18) ? 4 : (w == 9) ? 3 : (w == 4) ? 2 : (w == 2) ? 1 : 0;
    endfunction
    function integer offset_of(input integer word, input integer w);
        integer b;
        begin
            if (w == 18) offset_of = 20 * word;
            else if (w == 9) offset_of = 20 * (word / 2) + 9 * (word % 2);
            else begin
                b = (word * w) / 8;
                offset_of = 20 * (b / 2) + 9 * (b % 2) + (word * w) % 8;
            end
        end
    endfunction
PORTS
"""

_DP16KD_PORT = """
    wire [13:0] ad_{x} = {{{ad}}};
    wire [17:0] di_{x} = {{{di}}};
    reg [17:0] lat_{x} = 0, out_{x} = 0;
    assign {{{do}}} = (REGMODE_{X} == "OUTREG") ? out_{x} : lat_{x};
    always @(posedge CLK{X}) begin : port_{x}
        integer i, base;
        reg [17:0] rd;
        if (OCE{X})
            out_{x} <= lat_{x};
        if (CE{X}) begin
            base = offset_of(ad_{x} >> shift_of(DATA_WIDTH_{X}), DATA_WIDTH_{X});
            rd = 0;
            for (i = 0; i < DATA_WIDTH_{X}; i = i + 1) rd[i] = mem[base + i];
            if (WE{X}) begin
                for (i = 0; i < DATA_WIDTH_{X}; i = i + 1) mem[base + i] = di_{x}[i];
                if (WRITEMODE_{X} == "WRITETHROUGH") rd = di_{x};
            end
            if (!(WE{X} && WRITEMODE_{X} == "NORMAL"))
                lat_{x} <= rd;
        end
    end"""


def dp16kd_model(cells_sim_text):
    """A DP16KD simulation model: Yosys's black-box declaration of it in ``cells_sim_text``
    (ports, parameters) with a behaviour added (see the module docstring)."""
    m = re.search(r"^\(\* blackbox \*\)\s*\n(module DP16KD\(.*?)^endmodule", cells_sim_text,
                  re.M | re.S)
    if m is None:
        raise ValueError("DP16KD not found in the ECP5 cell models")
    ports = []
    for x in "ab":
        X = x.upper()
        ports.append(_DP16KD_PORT.format(
            x=x, X=X, ad=", ".join(f"AD{X}{i}" for i in reversed(range(14))),
            di=", ".join(f"DI{X}{i}" for i in reversed(range(18))),
            do=", ".join(f"DO{X}{i}" for i in reversed(range(18)))))
    behaviour = _DP16KD_BEHAVIOUR.replace(
        "INITVAL_3F_CAT", ", ".join(f"INITVAL_{i:02X}" for i in reversed(range(64)))
    ).replace("PORTS", "".join(ports))
    return m.group(1) + behaviour + "endmodule\n"


def _inline_includes(text, folder, seen):
    """``text`` with each `` `include "x.vh" `` replaced by that file of ``folder`` the first
    time and dropped after (Yosys's ECP5 models include two files twice, which Icarus Verilog
    takes as modules declared twice)."""
    def include(m):
        name = m.group(1)
        if name in seen:
            return ""
        seen.add(name)
        return _inline_includes((folder / name).read_text(), folder, seen)
    return re.sub(r'^`include "([^"]+)"\s*$', include, text, flags=re.M)


def _ecp5_cells(path):
    """Yosys's ECP5 cell models with the DP16KD black box replaced by :func:`dp16kd_model`."""
    path = Path(path)
    text = _inline_includes(path.read_text(), path.parent, set())
    # An elaboration-time $error in a generate branch (TRELLIS_SLICE's unknown-mode guard) is
    # SystemVerilog that Icarus Verilog 11 does not parse; Yosys never emits that mode.
    text = re.sub(r"^\s*\$error\(.*\);\s*$", "", text, flags=re.M)
    model = dp16kd_model(text)
    text = re.sub(r"^\(\* blackbox \*\)\s*\nmodule DP16KD\(.*?^endmodule\n", "", text,
                  flags=re.M | re.S)
    return text + model


def cell_models(family):
    """Verilog simulation models of the vendor cells a netlist (or an ``aes-fpga export``)
    instantiates, as :func:`simulate_netlist` uses them: ``"xc7"``, Yosys's Xilinx cells with
    :func:`bram_models` and :data:`BUFGCE_MODEL`; ``"ecp5"``, Yosys's ECP5 cells with
    :func:`dp16kd_model`."""
    if family == "ecp5":
        return _ecp5_cells(share_dir() / "ecp5" / "cells_sim.v")
    return (_cells_without_bram(share_dir() / "xilinx" / "cells_sim.v") + bram_models()
            + BUFGCE_MODEL)


def _testbench(top, ports, inputs, outputs, ncycles):
    in_cat = ", ".join(reversed(inputs)) if inputs else ""
    out_cat = ", ".join(reversed(outputs))
    in_bits = sum(ports[n][1] for n in inputs)
    decls = [f"    reg [{ports[n][1] - 1}:0] {n} = 0;" for n in inputs]
    decls += [f"    wire [{ports[n][1] - 1}:0] {n};" for n in outputs]
    conns = [f".{n}({n})" for n in [*inputs, *outputs]]
    clocked = "clk" in ports
    if clocked:
        conns.append(".clk(clk)")
    if "rst" in ports:
        conns.append(".rst(1'b0)")
    apply = f"        {{{in_cat}}} = stim[k];\n" if inputs else ""
    return f"""`timescale 1ns/1ps
module tb;
    reg clk = 0;
    reg [{max(in_bits, 1) - 1}:0] stim [0:{max(ncycles, 1) - 1}];
{chr(10).join(decls)}
    {top} dut({", ".join(conns)});
    integer k, f;
    initial begin
        $readmemh("stim.hex", stim);
        f = $fopen("out.txt", "w");
        for (k = 0; k < {ncycles}; k = k + 1) begin
{apply}            #4;
            $fwrite(f, "%b\\n", {{{out_cat}}});
            #1 clk = 1;
            #5 clk = 0;
        end
        $fclose(f);
        $finish;
    end
endmodule
"""


def output_fields(line, widths):
    """One ``$fwrite("%b")`` line of the concatenated outputs (first output in the low bits) as
    ``{name: value}``, a value being ``None`` when any of its bits is x or z.

    Binary, not hex: a hex digit holding an undefined bit prints as ``X``/``Z`` for all four of
    its bits, which would make defined bits of a neighbouring output read as undefined."""
    total = sum(widths.values())
    if len(line) != total or set(line) - set("01xXzZ"):
        raise ValueError(f"netlist output line {line!r} is not {total} binary digits")
    row = {}
    for name, width in widths.items():
        field, line = line[len(line) - width:], line[:len(line) - width]
        row[name] = None if set(field) - set("01") else int(field, 2)
    return row


def simulate_netlist(component, stimulus, *, part=DEFAULT_PART, workdir=None, name="top",
                     synth=None, undefined="raise"):
    """Synthesize ``component`` for ``part`` and simulate the netlist in Icarus Verilog.

    Same stimulus and result format as :func:`simulate_portable`. ``synth``, a
    :class:`~aes_fpga.flow.synth.SynthResult` of this component, skips the synthesis. An output with
    undefined (x/z) bits raises :class:`ValueError`, or reads ``None`` with ``undefined="none"``
    (for registers whose power-up value the netlist leaves open). Raises
    :class:`SimulatorMissing` when Icarus Verilog is not installed.
    """
    tools = find_iverilog()
    if tools is None:
        raise SimulatorMissing("Icarus Verilog (iverilog, vvp) is not installed; "
                               "on Debian/Ubuntu: apt-get install iverilog")
    iverilog, vvp = tools
    if synth is None:
        workdir = Path(workdir) if workdir is not None else Path(
            tempfile.mkdtemp(prefix="aes-post-"))
        synth = synthesize(component, part, name=name, workdir=workdir)
    workdir = synth.workdir
    result = synth
    ports = _netlist_ports(result.netlist.read_text(), name)
    in_sigs, out_sigs = io_ports(component)
    inputs = [n for n, _ in in_sigs if n in ports]
    outputs = [n for n, _ in out_sigs if n in ports]
    missing = [n for n, _ in out_sigs if n not in ports]
    if missing:
        raise ValueError(f"outputs {missing} are not ports of the synthesized netlist")

    # One hex word per cycle holding every input, first input in the low bits.
    current = dict.fromkeys(inputs, 0)
    lines = []
    for vec in stimulus:
        current.update({k: v for k, v in vec.items() if k in current})
        word, shift = 0, 0
        for n in inputs:
            width = ports[n][1]
            word |= (current[n] & ((1 << width) - 1)) << shift
            shift += width
        lines.append(f"{word:x}")
    (workdir / "stim.hex").write_text("\n".join(lines) + "\n")
    (workdir / "tb.v").write_text(_testbench(name, ports, inputs, outputs, len(stimulus)))
    if synth.part.upper().startswith("LFE5"):
        ecp5 = share_dir() / "ecp5"
        (workdir / "cells_sim.v").write_text(_ecp5_cells(ecp5 / "cells_sim.v"))
        compile_cmd = [iverilog, "-g2012", "-o", "sim.vvp", "-s", "tb",
                       "tb.v", "netlist.v", "cells_sim.v"]
    else:
        (workdir / "cells_sim.v").write_text(
            _cells_without_bram(share_dir() / "xilinx" / "cells_sim.v"))
        (workdir / "bram_models.v").write_text(bram_models() + BUFGCE_MODEL)
        compile_cmd = [iverilog, "-g2012", "-o", "sim.vvp", "-s", "tb",
                       "tb.v", "netlist.v", "cells_sim.v", "bram_models.v"]
    for cmd in (compile_cmd, [vvp, "-n", "sim.vvp"]):
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{Path(cmd[0]).name} failed in {workdir}:\n"
                               f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")

    widths = {n: ports[n][1] for n in outputs}
    results = []
    for line in (workdir / "out.txt").read_text().split():
        row = output_fields(line, widths)
        if undefined == "raise" and None in row.values():
            raise ValueError(f"netlist output has undefined bits at cycle {len(results)}: "
                             f"{', '.join(n for n, v in row.items() if v is None)} in {line}")
        results.append(row)
    return results
