"""lockd: a Python client for the lockd lock daemon (standard library
only).  Client is the blocking client, AsyncClient the asyncio one; both
give Leases with a fence (forward it with every write) and a handle
(the proof of holding), a keep-alive, and a lock() context manager.
Durations are seconds (int or float) or the protocol's strings ("30s",
"1500ms", "5m", "1h").  Errors: lockd.errors.
"""

from ._options import Options
from ._proto import Check, Lease, LockList, Status, duration_ms, now
from .aio import AsyncClient, AsyncKeepAlive, AsyncLockContext
from .client import Client, KeepAlive, LockContext, Pipeline
from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors_all

__version__ = "0.1.0"

__all__ = ["Client", "AsyncClient", "Pipeline", "KeepAlive",
           "AsyncKeepAlive", "LockContext", "AsyncLockContext", "Lease",
           "Status", "Check", "LockList", "Options", "duration_ms",
           "now"] + _errors_all
