"""The AES appliance: a transport-agnostic protocol stack around a core, host side and gateware.

Read it bottom up, like a network stack::

    spec       commands, status codes, Op/Mode/KeySize, limits, field tables (the standard)
    errors     one ProtocolError per status
    cobs       COBS byte stuffing                  (host functions; gateware twin: gateware.cobs)
    frame      header + payload + CRC-32 frames, the stream-to-frame decoder
    messages   request/reply payloads of INFO, LOAD_KEY, ZEROIZE, PROCESS
    reference  DeviceModel: the golden model of a device
    client     Device: the host driver, over any link (serial port, model, simulation)
    udp_client UdpLink, UdpDevice: the host side over UDP
    links      open_link: a link chosen by name (model, sim, udp://..., a serial port)
    gateware/  the device in Amaranth, one module a layer: cobs, check (frame check), executor,
               reply (reply builder), engine (them composed), uart (the UART transport),
               eth_appliance (the Ethernet transport), eth/ (the Ethernet/IPv4/UDP stack)

The host-side modules import only the standard library and :mod:`aes_fpga.model`; importing
this package imports nothing yet: each name below loads its module on first use, so host tools
start without Amaranth.
"""

from .._lazy import lazy_namespace

_WHERE = {
    "Fields": ".spec",
    "PROTOCOL_VERSION": ".spec",
    "MAGIC": ".spec",
    "REPLY_BIT": ".spec",
    "HEADER": ".spec",
    "HEADER_SIZE": ".spec",
    "CRC_SIZE": ".spec",
    "BLOCK_SIZE": ".spec",
    "PROCESS_HEADER": ".spec",
    "PROCESS_HEADER_SIZE": ".spec",
    "LOAD_KEY_HEADER": ".spec",
    "MAX_PROCESS_DATA": ".spec",
    "MAX_PAYLOAD": ".spec",
    "MIN_MAX_PAYLOAD": ".spec",
    "SERIAL_MAX_PAYLOAD": ".spec",
    "MAX_FRAME": ".spec",
    "MAX_DATAGRAM": ".spec",
    "UDP_MTU": ".spec",
    "UDP_HEADERS": ".spec",
    "frame_size": ".spec",
    "ALL_SLOTS": ".spec",
    "MAX_KEY_SLOTS": ".spec",
    "UDP_COUNTERS": ".spec",
    "FLAG_FIRST": ".spec",
    "FLAG_LAST": ".spec",
    "Command": ".spec",
    "Status": ".spec",
    "describe": ".spec",
    "reply_opcode": ".spec",
    "FLAGS_RESERVED": ".spec",
    "check_uint": ".spec",
    "check_bytes": ".spec",
    "check_enum": ".spec",
    "Op": ".spec",
    "Mode": ".spec",
    "KeySize": ".spec",
    "ProtocolError": ".errors",
    "CobsError": ".errors",
    "BadCrc": ".errors",
    "UnknownCommand": ".errors",
    "BadLength": ".errors",
    "BadSlot": ".errors",
    "KeyNotLoaded": ".errors",
    "LengthNotMultipleOf16": ".errors",
    "BadMode": ".errors",
    "BadKeySize": ".errors",
    "BadOp": ".errors",
    "BadFlags": ".errors",
    "ChainNotStarted": ".errors",
    "ChainMismatch": ".errors",
    "Busy": ".errors",
    "BadReply": ".errors",
    "DeviceError": ".errors",
    "error_for_status": ".errors",
    "check_slot": ".errors",
    "cobs_max_encoded_len": ".cobs",
    "cobs_encode": ".cobs",
    "cobs_decode": ".cobs",
    "MAX_ENCODED_FRAME": ".frame",
    "SERIAL_MAX_ENCODED_FRAME": ".frame",
    "max_encoded_frame": ".frame",
    "serial_frame_limit": ".frame",
    "FrameDecoder": ".frame",
    "Frame": ".frame",
    "frame_content": ".frame",
    "encode_frame": ".frame",
    "decode_frame": ".frame",
    "build_status_reply": ".messages",
    "parse_status_reply": ".messages",
    "DeviceInfo": ".messages",
    "build_info_request": ".messages",
    "parse_info_request": ".messages",
    "build_info_reply": ".messages",
    "parse_info_reply": ".messages",
    "LoadKeyRequest": ".messages",
    "build_load_key_request": ".messages",
    "parse_load_key_request": ".messages",
    "build_load_key_reply": ".messages",
    "parse_load_key_reply": ".messages",
    "build_zeroize_request": ".messages",
    "parse_zeroize_request": ".messages",
    "build_zeroize_reply": ".messages",
    "parse_zeroize_reply": ".messages",
    "ProcessRequest": ".messages",
    "build_process_request": ".messages",
    "build_process_requests": ".messages",
    "parse_process_request": ".messages",
    "build_process_reply": ".messages",
    "parse_process_reply": ".messages",
    "build_stats_request": ".messages",
    "parse_stats_request": ".messages",
    "build_stats_reply": ".messages",
    "parse_stats_reply": ".messages",
    "run_mode": ".reference",
    "DeviceModel": ".reference",
    "LinkError": ".client",
    "DeviceTimeout": ".client",
    "ModelLink": ".client",
    "SerialLink": ".client",
    "Device": ".client",
    "Progress": ".client",
    "open_link": ".links",
    "ProtocolEngine": ".gateware.engine",
    "CobsDecoder": ".gateware.cobs",
    "CobsEncoder": ".gateware.cobs",
    "FrameCheck": ".gateware.check",
    "Executor": ".gateware.executor",
    "ReplyBuilder": ".gateware.reply",
    "UartAppliance": ".gateware.uart",
    "UARTConfig": ".gateware.uart",
    "UARTTx": ".gateware.uart",
    "UARTRx": ".gateware.uart",
    "RX_LAYOUT": ".gateware.uart",
    "uart_divider": ".gateware.uart",
}

__all__ = list(_WHERE)


__getattr__, __dir__ = lazy_namespace(__name__, _WHERE)
