"""``aes-fpga keygen``: a new device key file (the secret ``aes-fpga build --device-key-file``
builds into an appliance and every host command's ``--device-key-file`` opens sessions with),
or the fingerprint of one. ``aes-fpga wrap-key``: a key file wrapped (SP 800-38F KWP,
:mod:`aes_fpga.keywrap`) under the key-encryption key of a device key
(:func:`~aes_fpga.appliance.session_spec.derive_key_wrap_key`), for keeping it outside the
device. No key is ever printed.

Host side only: nothing here loads the HDL.
"""

import os
import sys

from .common import fail
from .options import add_device_key_file

__all__ = ["add_keygen_arguments", "run_keygen", "add_wrap_arguments", "run_wrap"]


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


def add_wrap_arguments(p):
    add_device_key_file(p, "of the device the key is wrapped for (its key-encryption key is "
                           "derived from it); default: the file named by the "
                           "AES_FPGA_DEVICE_KEY_FILE environment variable, if set")
    p.add_argument("--key-file", required=True,
                   help="the key to wrap (raw bytes or hex, as encrypt's --key-file)")
    p.add_argument("out", metavar="OUT",
                   help="where to write the wrapped key (raw bytes: 8 more than the key "
                        "padded to a multiple of 8; mode 0600); an existing file is never "
                        "replaced")


def run_wrap(args):
    from ..appliance.client import LinkError
    from ..appliance.session_spec import derive_key_wrap_key
    from ..keywrap import wrap_with_padding
    from .crypt import read_key_file
    from .device import device_key

    try:
        secret = device_key(args)
        if secret is None:
            return fail("wrap-key", "no device key: give --device-key-file (or set "
                                    "AES_FPGA_DEVICE_KEY_FILE)")
        wrapped = wrap_with_padding(derive_key_wrap_key(secret), read_key_file(args.key_file))
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return fail("wrap-key", f"{args.out} exists; a wrapped key file is never replaced")
    except OSError as e:
        return fail("wrap-key", f"{args.out}: {e.strerror}")
    except (LinkError, ValueError) as e:
        return fail("wrap-key", e)
    with os.fdopen(fd, "wb") as f:
        f.write(wrapped)
    print(f"aes-fpga wrap-key: wrote {len(wrapped)} bytes to {args.out}: the key wrapped for "
          f"the device whose key file is {args.device_key_file or 'named by the environment'}",
          file=sys.stderr)
    return 0
