"""MMCME2 (7-series) and EHXPLLL (ECP5) configuration search."""

import pytest

from aes_fpga.flow.clocking import VCO_MHZ, mmcm_config


@pytest.mark.parametrize(("f_in", "f_out"), [(100, 100), (100, 150), (12, 100), (125, 200),
                                             (100, 123.4), (33.333, 75)])
def test_settings_are_legal_and_close(f_in, f_out):
    cfg = mmcm_config(f_in, f_out)
    assert VCO_MHZ[0] <= cfg.vco_mhz <= VCO_MHZ[1]
    assert 10 <= f_in / cfg.divclk <= 450
    assert (cfg.mult * 8).is_integer() and (cfg.divide * 8).is_integer()
    assert abs(cfg.error_ppm(f_out)) < 2000
    # the formula the MMCM implements
    assert cfg.f_out_mhz == pytest.approx(f_in * cfg.mult / cfg.divclk / cfg.divide)


def test_exact_when_possible():
    cfg = mmcm_config(100, 150)
    assert cfg.f_out_mhz == pytest.approx(150)


@pytest.mark.parametrize(("f_in", "f_out", "aux"), [(100, 100, 25), (100, 100, 50),
                                                    (100, 123.4, 25), (12, 150, 50)])
def test_second_output_exact(f_in, f_out, aux):
    """An Ethernet PHY's reference clock on CLKOUT1: exact, an integer divider of the VCO."""
    cfg = mmcm_config(f_in, f_out, aux_mhz=aux)
    assert VCO_MHZ[0] <= cfg.vco_mhz <= VCO_MHZ[1] and 1 <= cfg.aux_divide <= 128
    assert cfg.vco_mhz / cfg.aux_divide == pytest.approx(aux, rel=1e-12) == cfg.aux_mhz
    assert abs(cfg.error_ppm(f_out)) < 2000
    assert mmcm_config(f_in, f_out).aux_mhz is None


def test_second_output_impossible_named():
    with pytest.raises(ValueError, match=r"aux_mhz: 1 MHz cannot be made exactly from 100 "
                                         r"MHz by an MMCME2"):
        mmcm_config(100, 100, aux_mhz=1)


def test_out_of_range_named():
    with pytest.raises(ValueError, match="clock_mhz: 2000 is out of range"):
        mmcm_config(100, 2000)


@pytest.mark.parametrize(("f_in", "f_out"), [(25, 100), (25, 50), (25, 123.4), (100, 72),
                                             (100, 300), (12, 48)])
def test_ecp5_pll_settings_are_legal_and_close(f_in, f_out):
    from aes_fpga.flow.clocking import ECP5_PFD_MHZ, ECP5_VCO_MHZ, ecp5_pll_config
    cfg = ecp5_pll_config(f_in, f_out)
    assert ECP5_VCO_MHZ[0] <= cfg.vco_mhz <= ECP5_VCO_MHZ[1]
    assert ECP5_PFD_MHZ[0] <= cfg.pfd_mhz <= ECP5_PFD_MHZ[1]
    assert 1 <= cfg.clki_div <= 128 and 1 <= cfg.clkfb_div <= 80 and 1 <= cfg.clkop_div <= 128
    # the phase detector's 3.125 MHz floor limits the 25 MHz input to steps of 25/8 MHz and
    # coarser: 123.4 MHz comes out as 121.875
    assert cfg.f_out_mhz == pytest.approx(f_out, rel=0.015)


def test_ecp5_pll_third_output_exact():
    """An RGMII board's stack clock on CLKOS2 beside the 125 MHz transmit clock on CLKOS: both
    exact dividers of one VCO, the core clock on CLKOP."""
    from aes_fpga.flow.clocking import ecp5_pll_config
    cfg = ecp5_pll_config(25, 100, aux_mhz=125, aux2_mhz=62.5)
    assert (cfg.f_out_mhz, cfg.aux_mhz, cfg.aux2_mhz) == (100, 125, 62.5)
    assert ecp5_pll_config(25, 100, aux_mhz=125).aux2_mhz is None
    with pytest.raises(ValueError, match=r"aux2_mhz: 61 MHz cannot be made exactly from 25 "
                                         r"MHz by an EHXPLLL with clock_mhz 100 and aux_mhz 125"):
        ecp5_pll_config(25, 100, aux_mhz=125, aux2_mhz=61)


def test_ecp5_pll_out_of_range_named():
    from aes_fpga.flow.clocking import ecp5_pll_config
    with pytest.raises(ValueError, match=r"clock_mhz: 500 is out of range; an ECP5 PLL output "
                                         r"can be 3.125 to 400.0 MHz"):
        ecp5_pll_config(25, 500)
