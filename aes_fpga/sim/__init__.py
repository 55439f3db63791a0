"""Simulation harnesses: compiled (CXXRTL) simulation of byte-stream designs, the appliance as a
simulated host link, core traffic benches and the serial-line benchmark."""
