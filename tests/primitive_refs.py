"""Python reference behaviour of the primitives, cycle by cycle, written from their docstrings."""


class BramRef:
    """DualPortBRAM: read-first array read on enabled cycles, optional output register."""

    def __init__(self, width, depth, init, out_reg, writable):
        self.mask = (1 << width) - 1
        self.mem = list(init) + [0] * (depth - len(init))
        self.out_reg = out_reg
        self.writable = writable
        self.lat = [0, 0]
        self.reg = [0, 0]

    def outputs(self):
        return {f"rdata_{x}": (self.reg[i] if self.out_reg[i] else self.lat[i])
                for i, x in enumerate("ab")}

    def clock(self, vec):
        new_lat = list(self.lat)
        writes = []
        for i, x in enumerate("ab"):
            if vec.get(f"en_{x}", 1):
                addr = vec.get(f"addr_{x}", 0)
                new_lat[i] = self.mem[addr]
                if self.writable[i] and vec.get(f"we_{x}", 0):
                    writes.append((addr, vec.get(f"wdata_{x}", 0) & self.mask))
                self.reg[i] = self.lat[i]
        self.lat = new_lat
        for addr, value in writes:
            self.mem[addr] = value


def run_bram_ref(width, depth, init, out_reg, writable, stimulus):
    ref = BramRef(width, depth, init, out_reg, writable)
    out = []
    for vec in stimulus:
        out.append(ref.outputs())
        ref.clock(vec)
    return out


def run_xor_ref(width, a_regs, c_regs, p_reg, cascade_in, stimulus, *, pcin_select=False):
    """XorLane: delay lines on a and c (or none on pcin), XOR (or pcin alone while ``sel_pcin``
    is high, with ``pcin_select``), output register with reset."""
    mask48 = (1 << 48) - 1
    a_line = [0] * a_regs
    c_line = [0] * c_regs
    p = 0
    out = []
    for vec in stimulus:
        a_in = vec.get("a", 0) & ((1 << width) - 1)
        z_in = vec.get("pcin", 0) & mask48 if cascade_in else vec.get("c", 0) & ((1 << width) - 1)
        x = a_line[-1] if a_regs else a_in
        z = c_line[-1] if (c_regs and not cascade_in) else z_in
        comb = (x ^ z) & mask48
        if pcin_select and vec.get("sel_pcin", 0):
            comb = vec.get("pcin", 0) & mask48
        cur = p if p_reg else comb
        out.append({"p": cur & ((1 << width) - 1), "pcout": cur})
        if p_reg:
            p = 0 if vec.get("rst_p", 0) else comb
        if a_regs:
            a_line = [a_in] + a_line[:-1]
        if c_regs and not cascade_in:
            c_line = [z_in] + c_line[:-1]
    return out


def inferred_bram(**kwargs):
    """The portable memory of :class:`DualPortBRAM`, given to synthesis as it is, so Yosys
    infers the vendor block RAM itself (to check a behavioural model against Yosys's own
    mapping, independently of the library's vendor implementation)."""
    from aes_fpga.primitives import DualPortBRAM

    class InferredBRAM(DualPortBRAM):
        def elaborate(self, platform):
            return self._elaborate_portable()

    return InferredBRAM(**kwargs)


def bram_case(width, depth, out_reg, writable):
    """A :class:`DualPortBRAM` of a mapping test, its contents and the test's random source: the
    S-box pair for 8x512 (the core's ROM), random words otherwise."""
    import random

    from aes_fpga.model import INV_SBOX, SBOX
    from aes_fpga.primitives import DualPortBRAM

    rng = random.Random(width * 1000 + depth)
    if (width, depth) == (8, 512):
        init = list(SBOX) + list(INV_SBOX)
    else:
        init = [rng.getrandbits(width) for _ in range(depth)]
    dut = DualPortBRAM(width=width, depth=depth, init=init, out_reg=out_reg, writable=writable)
    return rng, init, dut
