"""A core written out as one self-contained Verilog file and a JSON description of its ports
(what ``aes-fpga export`` writes).

The file holds one top module, named after the core and its configuration by
:func:`top_name` (``aes_compact8_k128_s1_t8_axis_portable``), and every module below it, each
named ``<top>__<path>`` (``aes_compact8_k128_s1_t8_axis_portable__core__sbox``): two exports of
different configurations share no module name, so both can be read into one project. With
``vendor="xilinx"`` or ``"lattice"`` the file instantiates that vendor's primitives (RAMB18E1,
RAMB36E1, DSP48E1; DP16KD), which the vendor's tools (or their simulation libraries) provide;
``"portable"`` has none.

Interfaces: ``axis`` (:class:`~aes_fpga.export.axis.AxisCore`: ``aclk``, ``aresetn``,
AXI4-Stream key, request and result streams; for the mode engine
:class:`~aes_fpga.export.axis_modes.AxisModes`, its message streams) or ``native`` (the
core's own ports as Amaranth names them: ``clk``, ``rst`` active high and synchronous,
``key__valid``, ``key__payload``, ..., each payload a packed struct whose fields the JSON
lists).
"""

import re
from fractions import Fraction

from amaranth.lib import data

from ..params import Mode
from .axis import AxisCore
from .axis_modes import AxisModes

__all__ = ["DESIGNS", "INTERFACES", "VENDORS", "gcm_name", "top_name", "export_top",
           "port_table", "describe", "verilog_text", "time_zero_events", "header_comment",
           "AXIS_PORT_TEXT", "MODES_AXIS_PORT_TEXT", "GCM_FIELD_TEXT", "GCM_BEATS"]

#: What ``aes-fpga export --design`` writes, names of the table of designs: the core, or the
#: core in the mode engine (:class:`~aes_fpga.modes.ModeEngine`: ECB, CBC, CTR, and GCM with a
#: GHASH variant).
DESIGNS = ("core", "modes")
#: The interfaces ``aes-fpga export --interface`` offers.
INTERFACES = ("axis", "native")
#: The vendors ``aes-fpga export --vendor`` offers: whose primitives the core instantiates.
VENDORS = ("portable", "xilinx", "lattice")

#: What each port of the ``axis`` interface carries (the JSON's ``description``).
AXIS_PORT_TEXT = {
    "aclk": "clock, rising edge",
    "aresetn": "reset, active low, synchronous to aclk",
    "s_axis_key_tvalid": "key stream: valid",
    "s_axis_key_tready": "key stream: ready",
    "s_axis_key_tdata": "the key, FIPS-197 byte n in bits 8n+7:8n; a 128/192-bit key fills "
                        "bytes 0-15/0-23",
    "s_axis_key_tuser": "key length code (0 AES-128, 1 AES-192, 2 AES-256), zeroize (the "
                        "slot's round keys overwritten with zeros) and key slot (no bits "
                        "with one slot)",
    "s_axis_tvalid": "request stream: valid",
    "s_axis_tready": "request stream: ready",
    "s_axis_tdata": "the block, FIPS-197 byte n in bits 8n+7:8n",
    "s_axis_tuser": "operation (0 encrypt, 1 decrypt) and key slot (no bits with one slot)",
    "s_axis_tid": "request tag, returned with the result",
    "m_axis_tvalid": "result stream: valid",
    "m_axis_tready": "result stream: ready",
    "m_axis_tdata": "the result, FIPS-197 byte n in bits 8n+7:8n",
    "m_axis_tid": "the request's tag",
    "key_rejected": "one-cycle pulse: a key of a length the core was not built for was "
                    "taken and dropped",
}

#: What the ports of the mode engine's ``axis`` interface carry where they differ from the
#: core's (:class:`~aes_fpga.export.axis_modes.AxisModes`).
MODES_AXIS_PORT_TEXT = {
    **AXIS_PORT_TEXT,
    "s_axis_tvalid": "message stream: valid",
    "s_axis_tready": "message stream: ready",
    "s_axis_tdata": "the beat's block (IV, counter or J0 on a first beat), FIPS-197 byte n in "
                    "bits 8n+7:8n",
    "s_axis_tuser": "first (the message's first beat), mode (mode_codes), operation (0 encrypt, "
                    "1 decrypt) and key slot (no bits with one slot); GCM builds: aad, final "
                    "and nbytes",
    "s_axis_tid": "the beat's tag, returned with its result",
    "m_axis_tid": "the beat's tag",
    "m_axis_tuser": "GCM: auth_ok, on the result of a decryption's final beat",
    "key_rejected": AXIS_PORT_TEXT["key_rejected"],
}

_NATIVE_PORT_TEXT = {
    "clk": "clock, rising edge",
    "rst": "reset, active high, synchronous to clk",
    "valid": "valid", "ready": "ready",
    "lock": "no request for slot lock_slot is accepted while high",
    "lock_slot": "the slot lock holds",
    "payload": "payload (a packed struct, fields least significant first; 'block', 'data' "
               "and 'key' hold FIPS-197 byte 0 in their most significant bits)",
    "key_rejected": "one-cycle pulse: a key of a length the core was not built for was "
                    "taken and dropped",
}


def _ident(text):
    return re.sub(r"[^A-Za-z0-9_]", "_", str(text))


def gcm_name(gcm, ghash_digit=8):
    """The GCM part of a top module's name: ``gcmbram``, ``gcmlut`` + the digit, or ``""``
    without GCM."""
    if gcm is None:
        return ""
    return f"gcm{gcm}" + (str(ghash_digit) if gcm == "lut" else "")


def top_name(core_name, key_sizes, key_slots, tag_width, options=(), *, interface, vendor,
             design="core", gcm=None, ghash_digit=8):
    """The top module's name: ``aes_`` + the core, ``k`` + its key sizes, ``s`` + slots,
    ``t`` + tag bits, any other core option, ``modes`` for the mode engine (and its GCM:
    :func:`gcm_name`), the interface and the vendor, as a plain Verilog identifier."""
    parts = [f"aes_{core_name}", "k" + "_".join(map(str, key_sizes)), f"s{key_slots}",
             f"t{tag_width}", *(f"{k}{v}" for k, v in options),
             *(["modes"] if design == "modes" else []),
             *([gcm_name(gcm, ghash_digit)] if gcm is not None else []), interface, vendor]
    return _ident("_".join(parts))


def export_top(core, interface, design="core", *, gcm=None, ghash_digit=8):
    """The component written out: ``core`` behind :class:`AxisCore`, the core itself, or
    (``design="modes"``) the core in the mode engine (behind :class:`AxisModes` for
    ``axis``), made as every command makes that design of
    :data:`~aes_fpga.designs.table.DESIGN_TABLE` (no tag), with GCM when ``gcm`` names a
    GHASH variant (``ghash_digit``: the ``"lut"`` GHASH's digit)."""
    from ..sim.cxxsim import mark_used
    if interface not in INTERFACES or design not in DESIGNS:
        mark_used(core)
        raise ValueError(f"interface: {interface!r} or design: {design!r} is not known; "
                         f"choose from {', '.join(INTERFACES)} and {', '.join(DESIGNS)}")
    if gcm is not None and design != "modes":
        mark_used(core)
        raise ValueError(f"ghash: {gcm!r}: GCM is in the mode engine only (design modes)")
    if design == "modes":
        from ..designs.table import DESIGN_TABLE, DesignOptions
        engine = DESIGN_TABLE["modes"].make(core, DesignOptions(gcm=gcm, ghash_digit=ghash_digit))
        return engine if interface == "native" else AxisModes(engine)
    if interface == "native":
        return core
    try:
        return AxisCore(core)
    except ValueError as e:
        mark_used(core)     # refused, never to be elaborated
        raise ValueError(f"{e} (its own ports: interface native)") from None


def _platform(vendor):
    if vendor == "portable":
        return None
    from ..platform import part_platform
    if vendor == "xilinx":
        from ..flow.synth import DEFAULT_PART
        return part_platform(DEFAULT_PART)
    if vendor == "lattice":
        from ..flow.route import DEFAULT_ECP5_PART
        return part_platform(DEFAULT_ECP5_PART)
    raise ValueError(f"vendor: {vendor!r} is not known; choose from {', '.join(VENDORS)}")


def _fields(shape):
    """The fields of a packed struct port, least significant first (``[]`` for a plain one)."""
    if not isinstance(shape, data.StructLayout):
        return []
    out = []
    for name, field in shape:
        width = field.width
        if width:
            out.append({"name": name, "lsb": field.offset, "width": width,
                        **({"description": GCM_FIELD_TEXT[name]} if name in GCM_FIELD_TEXT
                           else {})})
    return sorted(out, key=lambda f: f["lsb"])


def port_table(top, interface):
    """Every port of ``top`` (from :func:`export_top`) as the Verilog file names it:
    ``name``, ``direction`` (``input``/``output``), ``width``, ``description`` and, for a
    packed struct, its ``fields`` (``name``, ``lsb``, ``width``)."""
    from amaranth.hdl import Shape
    ports = []
    if interface == "native":
        ports += [{"name": "clk", "direction": "input", "width": 1,
                   "description": _NATIVE_PORT_TEXT["clk"]},
                  {"name": "rst", "direction": "input", "width": 1,
                   "description": _NATIVE_PORT_TEXT["rst"]}]
    for path, member in top.signature.members.flatten():
        if not member.is_port:
            continue
        name = "__".join(map(str, path))
        width = Shape.cast(member.shape).width
        if not width:
            continue
        text = ((MODES_AXIS_PORT_TEXT if isinstance(top, AxisModes) else AXIS_PORT_TEXT)[name]
                if interface == "axis"
                else f"{path[0]}: {_NATIVE_PORT_TEXT.get(path[-1], path[-1])}"
                if len(path) > 1 else _NATIVE_PORT_TEXT.get(name, name))
        port = {"name": name, "direction": "input" if member.flow.name == "In" else "output",
                "width": width, "description": text}
        if fields := _fields(member.shape):
            port["fields"] = fields
        ports.append(port)
    return ports


def _fraction(value):
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else f"{value}"


#: What each GCM field of the mode engine's payloads carries (the JSON's field ``description``).
GCM_FIELD_TEXT = {
    "aad": "GCM: the block is additional authenticated data (no result)",
    "final": "GCM: the message's last beat; encryption: the result is the 16-byte tag; "
             "decryption: 'data' holds the expected tag, its first 'nbytes' (12 to 16) bytes "
             "compared",
    "nbytes": "GCM: bytes of the block (from FIPS-197 byte 0) that belong to the message, 1 "
              "to 16; below 16 only in the last AAD and the last data block",
    "auth_ok": "GCM: on the result of a decryption's final beat, high when the tag matched "
               "(its 'data' repeats the previous result's)",
}

#: A GCM message on the mode engine's ``i`` stream, beat by beat (the JSON's ``gcm.beats``).
GCM_BEATS = (
    "first: mode GCM, op, slot, data = J0 = nonce (96 bits) || 00000001; no result",
    "AAD: aad 1, nbytes, data = the block; no result",
    "data: aad 0, final 0, nbytes, data = plaintext (encrypt) or ciphertext (decrypt); one "
    "result, the bytes past nbytes zero",
    "final: final 1; encrypt: result = the tag; decrypt: data = the expected tag, nbytes = "
    "its length, result auth_ok",
)


def _gcm_info(top):
    ghash = top.ghash
    return {"ghash": top.gcm, "digit": ghash.digit if top.gcm == "lut" else None,
            "ghash_cycles_per_block": ghash.cycles_per_block,
            "ghash_tag_latency": top.tag_latency,
            "iv_bits": 96, "beats": list(GCM_BEATS)}


def describe(top, core, *, core_name, name, interface, vendor, command, version,
             design="core"):
    """The JSON description of the export of ``top`` (from :func:`export_top`) around
    ``core``: what it is and its ports (:func:`port_table`). The latency and blocks per cycle
    are the core's (the mode engine's for ECB, CTR and CBC decryption; CBC encryption takes
    one block per latency; a GCM build adds ``ModeEngine.GCM_EXTRA_LATENCY`` cycles in every
    mode). With GCM, ``gcm`` says which GHASH (its cycles per block; the engine's
    ``tag_latency`` as ``ghash_tag_latency``, the GHASH's bound on the tag's wait after the last
    data result, which E_K(J0) can exceed on a core whose latency is longer) and how a
    message's beats go."""
    sizes = list(core.key_sizes)
    ops = [op.name.lower() for op in getattr(core, "ops", None) or ()] or ["encrypt",
                                                                           "decrypt"]
    clock, reset = (("aclk", "aresetn"), ("clk", "rst"))[interface == "native"]
    gcm = design == "modes" and top.gcm is not None
    return {
        "top": name, "core": core_name, "design": design, "interface": interface,
        "vendor": vendor,
        "key_sizes": sizes, "key_slots": core.key_slots,
        "tag_width": getattr(top, "tag_width", core.tag_width),
        "ops": ops,
        "latency": {str(b): top.latency(b) for b in sizes},
        "blocks_per_cycle": {str(b): _fraction(core.blocks_per_cycle(b)) for b in sizes},
        "clock": clock,
        "reset": {"port": reset, "active": "low" if interface == "axis" else "high",
                  "synchronous": True},
        **({"mode_codes": {m.name: m.value for m in Mode if gcm or m != Mode.GCM}}
           if design == "modes" else {}),
        **({"gcm": _gcm_info(top)} if gcm else {}),
        "aes_fpga_version": version, "command": command,
        "ports": port_table(top, interface),
    }


def header_comment(info, description):
    """The comment at the head of the Verilog file: what it is, for whom, how it was made."""
    sizes = ", ".join(f"AES-{b}" for b in info["key_sizes"])
    lines = [
        f"{info['top']}: the aes-fpga core {info['core']} ({description})"
        + (" in the mode engine (ECB, CBC, CTR" + (", GCM" if "gcm" in info else "") + ")"
           if info["design"] == "modes" else ""),
        f"key sizes: {sizes}; key slots: {info['key_slots']}; tag bits: {info['tag_width']}; "
        f"operations: {', '.join(info['ops'])}",
        "latency (cycles from a request accepted to its result valid): "
        + ", ".join(f"AES-{b} {n}" for b, n in info["latency"].items()),
        "sustained blocks per cycle: "
        + ", ".join(f"AES-{b} {n}" for b, n in info["blocks_per_cycle"].items()),
        f"interface: {info['interface']} (clock {info['clock']}, reset {info['reset']['port']}"
        f" active {info['reset']['active']}, synchronous); ports: {info['top']}.json",
        f"vendor primitives: {info['vendor']}",
        f"aes-fpga {info['aes_fpga_version']}; made by: {info['command']}",
    ]
    if "gcm" in info:
        g = info["gcm"]
        lines.insert(4, f"GCM: 96-bit IVs; GHASH {g['ghash']}"
                     + (f" (digit {g['digit']})" if g["digit"] else "")
                     + f", {g['ghash_cycles_per_block']} cycles a block; the GHASH makes the "
                     f"tag wait at most {g['ghash_tag_latency']} cycles after the last data "
                     "result (it waits too for E_K(J0), sent to the core at the final beat: "
                     f"up to the core's latency); beats: {info['top']}.json")
    if info["interface"] == "axis":
        lines.insert(5, "byte order: FIPS-197 byte 0 in tdata[7:0] (AXI4-Stream byte lane 0)")
    synth = info["command"].replace(" export ", " synth ", 1)
    synth = re.sub(r" --(interface|vendor) \S+| -o \S+", "", synth)
    lines.append(f"resources (Xilinx 7-series, Yosys): run {synth}")
    return "".join(f"// {line}\n" for line in lines)


#: Yosys's ``write_verilog`` gives every module a ``reg <...dump_module$N> = 0;`` that each
#: ``always @*`` block reads, so that all of them run once at time 0 (a variable's initializer
#: is an event at time 0 in Verilog-2005). In SystemVerilog (``iverilog -g2012``, as cocotb's
#: runner compiles) an initializer is no event, and a block whose inputs never change keeps its
#: outputs X: the bram GHASH's constant tables stay X and its tags are wrong. The reg is set
#: instead by an ``initial #0`` (after every ``always`` waits), an event in both.
_TIME_ZERO = re.compile(r"^(\s*)reg (\\\S*dump_module\$\d+) +=\s*0;$", re.M)


def time_zero_events(text):
    """``text`` (Yosys's Verilog) with each module's time-0 trigger reg set by ``initial #0``
    rather than by its initializer (see :data:`_TIME_ZERO`), so every ``always @*`` block runs
    at time 0 in SystemVerilog simulators as in Verilog-2005 ones."""
    return _TIME_ZERO.sub(lambda m: f"{m[1]}reg {m[2]} ;\n{m[1]}initial #0 {m[2]} = 1'h0;",
                          text)


def verilog_text(top, name, vendor):
    """Verilog of ``top`` with ``name`` as its module name and ``<name>__<path>`` for every
    module below it (Amaranth names them ``name.path`` as escaped identifiers), every
    ``always @*`` block run at time 0 (:func:`time_zero_events`)."""
    from amaranth.back import verilog

    from ..flow.yosys import configure_amaranth
    configure_amaranth()
    text = verilog.convert(top, name=name, platform=_platform(vendor), emit_src=False)
    pattern = re.compile(r"\\" + re.escape(name) + r"\.(\S+) ")
    text = pattern.sub(lambda m: f"{name}__{_ident(m.group(1).replace('.', '__'))} ", text)
    text = time_zero_events(text)
    modules = re.findall(r"^module (\S+?)\s*\(", text, re.M)
    if len(set(modules)) != len(modules) or any(not m.startswith(name) for m in modules):
        raise RuntimeError(f"module names of the export are not unique: {modules}")
    return text
