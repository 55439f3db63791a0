"""Which vendor implementation to elaborate, and bare Xilinx parts for out-of-context synthesis."""

import re

from amaranth.vendor import XilinxPlatform

__all__ = ["is_xilinx_7series", "parse_part", "part_platform"]

_PART_RE = re.compile(r"^(xc7[azsk]\d+t?)([a-z]{2,3}g?\d+)-(\d+[a-z]?)$")


def is_xilinx_7series(platform):
    """True when ``platform`` is a Xilinx 7-series platform (Artix-7, Zynq-7000, Spartan-7,
    Kintex-7).

    Components use this single test to pick their RAMB/DSP48E1 implementation; any other
    platform, or ``None`` (simulation), gets the portable one.
    """
    return isinstance(platform, XilinxPlatform) and platform.family == "series7"


def parse_part(part):
    """Split a 7-series part name into ``(device, package, speed)``.

    ``"xc7a35tcsg324-1"`` gives ``("xc7a35t", "csg324", "1")``.
    """
    m = _PART_RE.match(part.lower())
    if m is None:
        raise ValueError(f"part: {part!r} is not a Xilinx 7-series part name; expected the form "
                         "xc7a35tcsg324-1 or xc7z020clg400-1")
    return m.group(1), m.group(2), m.group(3)


def part_platform(part, *, toolchain="Xray"):
    """A resource-less :class:`XilinxPlatform` for ``part``, for elaboration and synthesis only."""
    device, package, speed = parse_part(part)

    # device/package/speed are abstract on XilinxPlatform: they must be set in the class body.
    _BarePart = type("_BarePart", (XilinxPlatform,), {
        "device": device, "package": package, "speed": speed,
        "resources": [], "connectors": [],
    })
    _BarePart.__name__ = f"BarePart_{device}{package}_{speed}"
    return _BarePart(toolchain=toolchain)
