"""The byte buffers and protocols of a pool worker: frames from the pool, and the channel between the supervisor
and the fork server (`forkserver.py`).

Pool -> worker: one frame per job (an 8-byte length, then the job as JSON), read by the fork server.
Supervisor -> fork server: "go" (a 4-byte length, then the next job's working directory; empty: the boundary's
/tmp) once the last job is cleaned up. Fork server -> supervisor: the job's pid (4 bytes) with four descriptors
attached (the read ends of its stdout, stderr and result pipes, and its pidfd), then its wait status and CPU time in
microseconds (`STATUS`) once it reaped the job.
"""

from __future__ import annotations

import os
import socket
import struct

from kt_train.sandbox.boundary import JOB_DIR


class Buffer:
    """A byte buffer allocated once, filled by readv (no bytes objects), zeroed after use."""

    def __init__(self, limit: int, initial: int = 65536) -> None:
        self.limit = limit
        self.data = bytearray(min(limit, initial))
        self.size = 0
        self.truncated = False

    def _grow(self) -> None:
        bigger = bytearray(min(self.limit, 2 * len(self.data)))
        bigger[: self.size] = self.data[: self.size]
        self.data[:] = bytes(len(self.data))
        self.data = bigger

    def read_from(self, fd: int, discard: bytearray) -> bool:
        """Read once from `fd` (what is over the limit goes to `discard`); False at EOF."""
        if self.size == len(self.data) and len(self.data) < self.limit:
            self._grow()
        if self.size < len(self.data):
            got = os.readv(fd, [memoryview(self.data)[self.size :]])
            self.size += got
        else:
            got = os.readv(fd, [discard])
            self.truncated |= got > 0
        return got > 0

    def view(self) -> memoryview:
        return memoryview(self.data)[: self.size]

    def wipe(self) -> None:
        self.data[: self.size] = bytes(self.size)
        self.size = 0
        self.truncated = False


INT = struct.Struct("!i")
STATUS = struct.Struct("!iq")  # wait status, CPU microseconds (user + system, the job and its waited children)
FRAME_HEADER = struct.Struct("!Q")


def read_exactly(fd: int, n: int) -> bytes | None:
    """`n` bytes from the pipe `fd`, or None at EOF."""
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def recv_exactly(channel: socket.socket, n: int) -> bytes | None:
    """`n` bytes from the socket, or None at EOF."""
    buf = bytearray()
    while len(buf) < n:
        chunk = channel.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame_into(fd: int, buffer: Buffer) -> bool:
    """Read one frame's body into `buffer` without making a bytes object of it; False at EOF."""
    header = read_exactly(fd, FRAME_HEADER.size)
    if header is None:
        return False
    size = FRAME_HEADER.unpack(header)[0]
    while len(buffer.data) < size:
        buffer._grow()
    view = memoryview(buffer.data)
    while buffer.size < size:
        got = os.readv(fd, [view[buffer.size : size]])
        if not got:
            return False
        buffer.size += got
    return True


def send_go(channel: socket.socket, workdir: str) -> None:
    """Tell the fork server that the last job is cleaned up: the next one may start, in `workdir`."""
    name = workdir.encode() if workdir != JOB_DIR else b""
    channel.sendall(INT.pack(len(name)) + name)


def next_workdir(channel: socket.socket) -> str | None:
    """Wait for the supervisor's go; the next job's working directory, or None when the supervisor is gone."""
    header = recv_exactly(channel, INT.size)
    if header is None:
        return None
    size = INT.unpack(header)[0]
    if not size:
        return JOB_DIR
    name = recv_exactly(channel, size)
    return None if name is None else name.decode()


__all__ = [
    "FRAME_HEADER",
    "INT",
    "STATUS",
    "Buffer",
    "next_workdir",
    "read_exactly",
    "read_frame_into",
    "recv_exactly",
    "send_go",
]
