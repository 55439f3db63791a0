"""Cores out of the library as Verilog for other HDL projects: :class:`AxisCore` puts a core behind
AXI4-Stream ports (:mod:`.axis`), :class:`AxisModes` the mode engine (:mod:`.axis_modes`);
:mod:`.verilog` writes one self-contained Verilog file and a JSON description of its ports
(``aes-fpga export``)."""

from .axis import AxisCore, axis_ports, key_user_layout, request_user_layout, reverse_bytes
from .axis_modes import AxisModes, modes_axis_ports, modes_user_layout

__all__ = ["AxisCore", "axis_ports", "key_user_layout", "request_user_layout", "reverse_bytes",
           "AxisModes", "modes_axis_ports", "modes_user_layout"]
