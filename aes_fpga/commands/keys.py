"""``aes-fpga keygen``: a new device key file (the secret ``aes-fpga build --device-key-file``
builds into an appliance and every host command's ``--device-key-file`` opens sessions with),
or the fingerprint of one. The key itself is never printed.

Host side only: nothing here loads the HDL.
"""

import sys

from .common import fail

__all__ = ["add_keygen_arguments", "run_keygen"]


def add_keygen_arguments(p):
    p.add_argument("file", metavar="FILE",
                   help="where to write the new key: 64 hex digits from the operating "
                        "system's random source, mode 0600; an existing file is never "
                        "replaced")
    p.add_argument("--fingerprint", action="store_true",
                   help="write nothing: print the fingerprint of the key in FILE (as a build "
                        "report shows it)")


def run_keygen(args):
    from ..appliance.device_key import fingerprint, read_private_key_file, write_key_file

    try:
        if args.fingerprint:
            print(fingerprint(read_private_key_file(args.file)))
            return 0
        mark = write_key_file(args.file)
    except FileExistsError:
        return fail("keygen", f"{args.file} exists; a key file is never replaced (remove it "
                              f"first, knowing that a device built with it then needs it)")
    except OSError as e:
        return fail("keygen", e if e.filename is None else f"{args.file}: {e.strerror}")
    except ValueError as e:
        return fail("keygen", e)
    print(mark)
    print(f"aes-fpga keygen: wrote a new device key to {args.file} (mode 0600), fingerprint "
          f"{mark}; keep it secret, and keep a copy: a device built with it answers only "
          f"hosts that have it", file=sys.stderr)
    return 0
