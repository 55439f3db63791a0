"""The README's example of the core inside someone else's design runs as written."""

import re
from pathlib import Path

from amaranth.sim import Simulator

from aes_fpga.model import FIPS197_EXAMPLES
from aes_fpga.params import KeySize, Op

README = Path(__file__).parent.parent / "README.md"


def example():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- example:core begin -->\n```python\n(.*?)```", text, re.S)
    assert block, "the README lost its example"
    return block.group(1)


def test_readme_core_example_encrypts():
    code = example()
    assert len(code.strip().splitlines()) <= 15
    namespace = {}
    exec(compile(code, "README.md example", "exec"), namespace)
    dut = namespace["Encryptor"]()
    key, pt, ct = FIPS197_EXAMPLES[128]
    got = []

    async def bench(ctx):
        ctx.set(dut.key.payload, {"key": int.from_bytes(key, "big") << 128,
                                  "key_bits": KeySize.AES128, "slot": 0})
        ctx.set(dut.key.valid, 1)
        await ctx.tick().until(dut.key.ready)
        ctx.set(dut.key.valid, 0)
        ctx.set(dut.i.payload, {"block": int.from_bytes(pt, "big"), "op": Op.ENCRYPT,
                                "slot": 0, "tag": 5})
        ctx.set(dut.i.valid, 1)
        await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 1)
        (payload,) = await ctx.tick().sample(dut.o.payload).until(dut.o.valid)
        got.append(payload)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run_until(1e-5)
    assert len(got) == 1
    assert got[0].block.to_bytes(16, "big") == ct
    assert got[0].tag == 5
