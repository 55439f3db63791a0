"""MMCME2 configuration search."""

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


def test_out_of_range_named():
    with pytest.raises(ValueError, match="clock_mhz: 2000 is out of range"):
        mmcm_config(100, 2000)
