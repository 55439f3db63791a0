"""Clock generator settings for a requested core clock: the 7-series MMCME2 and the ECP5 PLL.

:func:`mmcm_config` searches the MMCME2_BASE settings (input divider ``DIVCLK_DIVIDE``, feedback
multiplier ``CLKFBOUT_MULT_F`` and output divider ``CLKOUT0_DIVIDE_F``, both in steps of 1/8)
for the output frequency closest to the request, within the VCO and phase-detector ranges of the
Artix-7/Zynq-7000 data sheets (DS181/DS187, speed grade -1: VCO 600-1200 MHz, PFD 10-450 MHz).
:func:`ecp5_pll_config` does the same for the Lattice ECP5 EHXPLLL.
"""

from dataclasses import dataclass

__all__ = ["MmcmConfig", "mmcm_config", "Ecp5PllConfig", "ecp5_pll_config"]

VCO_MHZ = (600.0, 1200.0)
PFD_MHZ = (10.0, 450.0)
OUT_MHZ = (4.69, 800.0)


@dataclass(frozen=True)
class MmcmConfig:
    """One MMCME2_BASE setting: ``f_out = f_in * mult / (divclk * divide)``."""
    f_in_mhz: float
    divclk: int
    mult: float
    divide: float
    #: the integer divider of a second output (CLKOUT1) made exactly, 0 for none
    aux_divide: int = 0

    @property
    def vco_mhz(self):
        return self.f_in_mhz * self.mult / self.divclk

    @property
    def f_out_mhz(self):
        return self.vco_mhz / self.divide

    @property
    def aux_mhz(self):
        """CLKOUT1's frequency (``None`` without a second output)."""
        return self.vco_mhz / self.aux_divide if self.aux_divide else None

    def error_ppm(self, f_target_mhz):
        return (self.f_out_mhz - f_target_mhz) / f_target_mhz * 1e6


def _exact_divider(vco_mhz, want_mhz):
    """The integer output divider (1..128: an MMCME2's CLKOUT1, an EHXPLLL's CLKOS and CLKOS2)
    making ``want_mhz`` exactly from ``vco_mhz``: 0 for no output (``want_mhz`` ``None``),
    ``None`` when there is none."""
    if want_mhz is None:
        return 0
    div = round(vco_mhz / want_mhz)
    if not 1 <= div <= 128 or abs(vco_mhz / div - want_mhz) > 1e-9 * want_mhz:
        return None
    return div


def mmcm_config(f_in_mhz, f_out_mhz, *, aux_mhz=None):
    """The MMCME2 setting whose output is closest to ``f_out_mhz`` (ties: lowest VCO).

    With ``aux_mhz``, only settings whose VCO makes that frequency exactly on a second output
    (an integer divider, 1 to 128, as CLKOUT1 has) are considered: a reference clock that must
    be exact (an Ethernet PHY's 25 or 50 MHz, +-50 ppm) beside a core clock that may be near.

    Raises :class:`ValueError` naming the parameter and the allowed range when the request is
    outside what the MMCM can make.
    """
    if not OUT_MHZ[0] <= f_out_mhz <= OUT_MHZ[1]:
        raise ValueError(f"clock_mhz: {f_out_mhz} is out of range; an MMCME2 output can be "
                         f"{OUT_MHZ[0]} to {OUT_MHZ[1]} MHz")
    best = None
    for divclk in range(1, 107):
        pfd = f_in_mhz / divclk
        if pfd < PFD_MHZ[0]:
            break
        if pfd > PFD_MHZ[1]:
            continue
        for mult8 in range(2 * 8, 64 * 8 + 1):
            vco = pfd * mult8 / 8
            if not VCO_MHZ[0] <= vco <= VCO_MHZ[1]:
                continue
            aux = _exact_divider(vco, aux_mhz)
            if aux is None:
                continue
            # the output divider closest to the target, in eighths from 1 to 128
            div8 = min(max(round(vco / f_out_mhz * 8), 8), 128 * 8)
            cfg = MmcmConfig(f_in_mhz, divclk, mult8 / 8, div8 / 8, aux)
            key = (abs(cfg.f_out_mhz - f_out_mhz), cfg.vco_mhz)
            if best is None or key < best[0]:
                best = (key, cfg)
    if best is None and aux_mhz is not None:
        raise ValueError(f"aux_mhz: {aux_mhz} MHz cannot be made exactly from {f_in_mhz} MHz "
                         f"by an MMCME2 (VCO {VCO_MHZ[0]} to {VCO_MHZ[1]} MHz, integer output "
                         f"divider 1 to 128)")
    if best is None:
        raise ValueError(f"clock input: {f_in_mhz} MHz cannot drive an MMCME2 "
                         f"(phase detector {PFD_MHZ[0]} to {PFD_MHZ[1]} MHz)")
    return best[1]


# Lattice ECP5 EHXPLLL (TN1263 and the ECP5 data sheet): phase detector 3.125-400 MHz, VCO
# 400-800 MHz, CLKOP output 3.125-400 MHz; CLKI_DIV 1-128, CLKFB_DIV 1-80, CLKOP_DIV 1-128.
ECP5_PFD_MHZ = (3.125, 400.0)
ECP5_VCO_MHZ = (400.0, 800.0)
ECP5_OUT_MHZ = (3.125, 400.0)


@dataclass(frozen=True)
class Ecp5PllConfig:
    """One EHXPLLL setting with CLKOP as its own feedback:
    ``f_out = f_in * clkfb_div / clki_div`` and the VCO at ``f_out * clkop_div``."""
    f_in_mhz: float
    clki_div: int
    clkfb_div: int
    clkop_div: int
    #: the integer divider of a second output (CLKOS) made exactly from the VCO, 0 for none
    aux_div: int = 0
    #: the same of a third output (CLKOS2), 0 for none
    aux2_div: int = 0

    @property
    def f_out_mhz(self):
        return self.f_in_mhz * self.clkfb_div / self.clki_div

    @property
    def aux_mhz(self):
        """The second output's frequency (``None`` without one)."""
        return self.vco_mhz / self.aux_div if self.aux_div else None

    @property
    def aux2_mhz(self):
        """The third output's frequency (``None`` without one)."""
        return self.vco_mhz / self.aux2_div if self.aux2_div else None

    @property
    def vco_mhz(self):
        return self.f_out_mhz * self.clkop_div

    @property
    def pfd_mhz(self):
        return self.f_in_mhz / self.clki_div


def ecp5_pll_config(f_in_mhz, f_out_mhz, *, aux_mhz=None, aux2_mhz=None):
    """The EHXPLLL setting whose CLKOP is closest to ``f_out_mhz`` (ties: VCO nearest the middle
    of its range); with ``aux_mhz``, among those whose VCO also makes ``aux_mhz`` exactly by an
    integer divider (an Ethernet PHY's clock, on CLKOS), and with ``aux2_mhz`` that too (on
    CLKOS2).

    Raises :class:`ValueError` naming the parameter and the allowed range when the request is
    outside what the PLL can make.
    """
    if not ECP5_OUT_MHZ[0] <= f_out_mhz <= ECP5_OUT_MHZ[1]:
        raise ValueError(f"clock_mhz: {f_out_mhz} is out of range; an ECP5 PLL output can be "
                         f"{ECP5_OUT_MHZ[0]} to {ECP5_OUT_MHZ[1]} MHz")
    best = None
    mid = sum(ECP5_VCO_MHZ) / 2
    for clki in range(1, 129):
        if not ECP5_PFD_MHZ[0] <= f_in_mhz / clki <= ECP5_PFD_MHZ[1]:
            continue
        for clkfb in range(1, 81):
            cfg = Ecp5PllConfig(f_in_mhz, clki, clkfb, 1)
            f = cfg.f_out_mhz
            if not ECP5_OUT_MHZ[0] <= f <= ECP5_OUT_MHZ[1]:
                continue
            if aux_mhz is None and aux2_mhz is None:
                # the output divider that puts the VCO nearest the middle of its range
                divs = [min(max(round(mid / f), 1), 128)]
            else:
                divs = range(1, 129)
            for div in divs:
                cfg = Ecp5PllConfig(f_in_mhz, clki, clkfb, div)
                if not ECP5_VCO_MHZ[0] <= cfg.vco_mhz <= ECP5_VCO_MHZ[1]:
                    continue
                extra = [_exact_divider(cfg.vco_mhz, want) for want in (aux_mhz, aux2_mhz)]
                if None in extra:
                    continue
                cfg = Ecp5PllConfig(f_in_mhz, clki, clkfb, div, *extra)
                key = (abs(f - f_out_mhz), abs(cfg.vco_mhz - mid))
                if best is None or key < best[0]:
                    best = (key, cfg)
    if best is None and (aux_mhz is not None or aux2_mhz is not None):
        name, want = ("aux_mhz", aux_mhz) if aux2_mhz is None else ("aux2_mhz", aux2_mhz)
        raise ValueError(f"{name}: {want} MHz cannot be made exactly from {f_in_mhz} MHz "
                         f"by an EHXPLLL with clock_mhz {f_out_mhz}"
                         + (f" and aux_mhz {aux_mhz}" if name == "aux2_mhz" and aux_mhz
                            else ""))
    if best is None:
        raise ValueError(f"clock input: {f_in_mhz} MHz cannot drive an ECP5 PLL "
                         f"(phase detector {ECP5_PFD_MHZ[0]} to {ECP5_PFD_MHZ[1]} MHz)")
    return best[1]

