"""Which vendor implementation to elaborate, and bare parts (Xilinx 7-series, Lattice ECP5) for
out-of-context synthesis."""

import re

from amaranth.vendor import LatticeECP5Platform, XilinxPlatform

__all__ = ["is_xilinx_7series", "is_lattice_ecp5", "family_of", "parse_part", "parse_ecp5_part",
           "part_platform"]

_PART_RE = re.compile(r"^(xc7[azsk]\d+t?)([a-z]{2,3}g?\d+)-(\d+[a-z]?)$")
# Lattice's ordering code without the temperature grade: LFE5U-85F-6BG381 (device, speed,
# package); a trailing C or I (commercial, industrial) is accepted and ignored.
_ECP5_PART_RE = re.compile(r"^(LFE5U(?:M|M5G)?-(?:12|25|45|85)F)-(\d)((?:BG|MG)\d+)[CI]?$")


def is_xilinx_7series(platform):
    """True when ``platform`` is a Xilinx 7-series platform (Artix-7, Zynq-7000, Spartan-7,
    Kintex-7).

    Components use this single test to pick their RAMB/DSP48E1 implementation; any other
    platform, or ``None`` (simulation), gets the portable one.
    """
    return isinstance(platform, XilinxPlatform) and platform.family == "series7"


def is_lattice_ecp5(platform):
    """True when ``platform`` is a Lattice ECP5 platform (LFE5U, LFE5UM, LFE5UM5G).

    Components use this test, like :func:`is_xilinx_7series`, to pick their DP16KD
    implementation.
    """
    return isinstance(platform, LatticeECP5Platform) and platform.family == "ecp5"


def family_of(platform):
    """``"xc7"``, ``"ecp5"`` or ``None`` (another platform, or none): the FPGA family whose
    primitives and flow a platform gets."""
    if is_xilinx_7series(platform):
        return "xc7"
    if is_lattice_ecp5(platform):
        return "ecp5"
    return None


def parse_ecp5_part(part):
    """Split an ECP5 part name into ``(device, speed, package)``.

    ``"LFE5U-85F-6BG381C"`` gives ``("LFE5U-85F", "6", "BG381")``.
    """
    m = _ECP5_PART_RE.match(part.upper())
    if m is None:
        raise ValueError(f"part: {part!r} is not a Lattice ECP5 part name; expected the form "
                         "LFE5U-85F-6BG381 or LFE5UM5G-85F-8BG554")
    return m.group(1), m.group(2), m.group(3)


def parse_part(part):
    """Split a 7-series part name into ``(device, package, speed)``.

    ``"xc7a35tcsg324-1"`` gives ``("xc7a35t", "csg324", "1")``.
    """
    m = _PART_RE.match(part.lower())
    if m is None:
        raise ValueError(f"part: {part!r} is not a Xilinx 7-series part name; expected the form "
                         "xc7a35tcsg324-1 or xc7z020clg400-1")
    return m.group(1), m.group(2), m.group(3)


def _bare(base, name, device, package, speed):
    # device/package/speed are abstract on the vendor platforms: they must be set in the class
    # body.
    cls = type(name, (base,), {"device": device, "package": package, "speed": speed,
                               "resources": [], "connectors": []})
    cls.__name__ = name
    return cls


def part_platform(part, *, toolchain="Xray"):
    """A resource-less :class:`XilinxPlatform` (or, for an ECP5 part name,
    :class:`LatticeECP5Platform`) for ``part``, for elaboration and synthesis only."""
    if part.upper().startswith("LFE5"):
        device, speed, package = parse_ecp5_part(part)
        return _bare(LatticeECP5Platform, f"BarePart_{device}_{speed}{package}", device,
                     package, speed)(toolchain="Trellis")
    device, package, speed = parse_part(part)
    return _bare(XilinxPlatform, f"BarePart_{device}{package}_{speed}", device, package,
                 speed)(toolchain=toolchain)
