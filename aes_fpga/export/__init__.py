"""Cores out of the library as Verilog for other HDL projects: :class:`AxisCore` puts a core
behind AXI4-Stream ports (:mod:`.axis`); :mod:`.verilog` writes one self-contained Verilog file
and a JSON description of its ports (``aes-fpga export``)."""

from .axis import AxisCore, axis_ports, key_user_layout, request_user_layout, reverse_bytes

__all__ = ["AxisCore", "axis_ports", "key_user_layout", "request_user_layout", "reverse_bytes"]
