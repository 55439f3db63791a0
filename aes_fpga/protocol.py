"""The appliance protocol under its former name (kept for one release).

Every name here is re-exported from :mod:`aes_fpga.appliance` (:mod:`~aes_fpga.appliance.spec`,
:mod:`~aes_fpga.appliance.frame`, :mod:`~aes_fpga.appliance.messages`, ...); import from there.
"""

from .appliance import cobs as _cobs
from .appliance import errors as _errors
from .appliance import frame as _frame
from .appliance import messages as _messages
from .appliance import reference as _reference
from .appliance import spec as _spec
from .appliance.cobs import *  # noqa: F403
from .appliance.errors import *  # noqa: F403
from .appliance.frame import *  # noqa: F403
from .appliance.messages import *  # noqa: F403
from .appliance.reference import *  # noqa: F403
from .appliance.spec import *  # noqa: F403

__all__ = [name for module in (_spec, _errors, _cobs, _frame, _messages, _reference)
           for name in module.__all__]
