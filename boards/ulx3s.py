"""Radiona ULX3S 85F (Lattice ECP5 LFE5U-85F, CABGA381): 25 MHz oscillator, 8 LEDs, USB-UART
through the FT231X on the programming port."""

from amaranth_boards.ulx3s import ULX3S_85F_Platform

from ._base import Board

BOARDS = [
    Board("ulx3s-85", "Radiona ULX3S 85F (LFE5U-85F)", ULX3S_85F_Platform,
          frontends=("uart",), programmer="ulx3s",
          notes="serial line on the FT231X (no RTS/CTS: the board wires RTS and DTR only)",
          # A build with a device secret (the handshake, its KDF core, the records' GCM
          # engine and core, the kept replies, the counters) does not meet 100 MHz on this
          # -6 part (see session_records.py for the routed figures); the serial line needs
          # nowhere near it (3 Mbaud is a byte every 250 cycles at 75 MHz).
          secured_clock_mhz=75.0,
          # and its sync reset on a global network: it resets thousands of flip-flops, and
          # through the general routing nextpnr-ecp5's router went round in circles on that
          # one net at seed 1 (README "A board may declare the clock of a secured build").
          secured_global_reset=True),
]
