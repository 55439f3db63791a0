"""``aes-fpga primitives``: the block RAM and DSP primitives synthesized one by one, with their
latency and utilisation."""

from .common import announced, prepare_tools, print_json
from .options import add_json, add_part

__all__ = ["add_arguments", "run", "primitive_cases"]


def primitive_cases():
    """The primitives the command reports: ``(name, make, latency)`` with ``make()`` giving
    the component and ``latency(component)`` its cycles."""
    from ..cores.drab_locus import mix_columns_products
    from ..model import INV_SBOX, SBOX
    from ..primitives import DualPortBRAM, XorLane

    products = mix_columns_products()
    return [
        ("S-box ROM 512x8, 2 ports, output reg",
         lambda: DualPortBRAM(width=8, depth=512, init=list(SBOX) + list(INV_SBOX)),
         lambda d: d.latency("a")),
        ("GF product ROM 512x32, 2 ports, output reg",
         lambda: DualPortBRAM(width=32, depth=512, init=products), lambda d: d.latency("a")),
        ("XOR lane 48b, A/C/P regs",
         lambda: XorLane(48, a_regs=1, c_regs=1), lambda d: d.latency_a),
        ("XOR lane 48b, 2 A regs, cascade in",
         lambda: XorLane(48, a_regs=2, cascade_in=True), lambda d: d.latency_a),
        ("XOR lane 32b, 2 A regs, C/P regs",
         lambda: XorLane(32, a_regs=2, c_regs=1), lambda d: d.latency_a),
    ]


def add_arguments(p):
    add_part(p)
    add_json(p)


def run(args):
    from ..flow.synth import synthesize

    prepare_tools()
    rows = []
    cases = primitive_cases()
    for i, (name, make, latency) in enumerate(cases, 1):
        with announced(f"[{i}/{len(cases)}] synth_xilinx {args.part}: {name}"):
            dut = make()
            u = synthesize(dut, args.part).total
        rows.append({"primitive": name, "latency_cycles": latency(dut), "lut": u.lut, "ff": u.ff,
                     "ramb18": u.ramb18, "ramb36": u.ramb36, "dsp": u.dsp})
    if args.json:
        print_json({"part": args.part, "primitives": rows})
        return 0
    cols = ["latency_cycles", "lut", "ff", "ramb18", "ramb36", "dsp"]
    heads = ["latency", "LUT", "FF", "RAMB18", "RAMB36", "DSP48E1"]
    width = max(len(r["primitive"]) for r in rows)
    print(f"Yosys synth_xilinx on {args.part} (out of context, no I/O buffers)")
    print(f"{'primitive':<{width}}  " + "  ".join(f"{h:>7}" for h in heads))
    for r in rows:
        print(f"{r['primitive']:<{width}}  " + "  ".join(f"{r[c]:>7}" for c in cols))
    return 0
