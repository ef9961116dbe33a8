"""glibc malloc settings for CPU training: keep freed tensor memory instead of handing it back every step."""

from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest allowed value on 64-bit
TRIM_THRESHOLD = 1024 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Serve allocations up to 32 MiB from the heap and keep up to 1 GiB of freed memory at its top.

    By default glibc maps every allocation over its (adaptive) mmap threshold with mmap and unmaps it when freed, so
    each training step faults in and zeroes fresh pages for the same activation and gradient buffers. Returns False
    where mallopt is not available (not glibc) or refused a value; nothing changes then.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
