"""Linux process controls used by the sandbox: libc calls, rlimits, privileges, network."""

from __future__ import annotations

import ctypes
import errno
import os
import resource
from typing import Any

from kt_train.sandbox.config import SandboxConfig

_CLONE_NEWNET = 0x40000000
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_KEEPCAPS = 8
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_DAC_READ_SEARCH = 2
_LIBC: ctypes.CDLL | None = None
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
_KEYCTL_GET_KEYRING_ID, _KEYCTL_JOIN_SESSION_KEYRING, _KEYCTL_SETPERM = 0, 1, 5
_KEYCTL_INVALIDATE, _KEYCTL_GET_PERSISTENT = 21, 22
_KEY_USR_ALL = 0x003F0000  # every permission for the owner; none for a possessor, the group or others
_KEY_SPEC_SESSION_KEYRING, _KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -3, -4, -5


def _libc() -> ctypes.CDLL:
    """The C library (loaded once per process, before the job processes are forked)."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
        for name in ("prctl", "capset", "unshare", "syscall", "mount"):
            getattr(_LIBC, name, None)  # resolve the symbols now, not in every job process
    return _LIBC


def unshare_network() -> bool:
    """Move this process into a new, empty network namespace; False where not permitted."""
    try:
        return _libc().unshare(_CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def prctl(option: int, value: int) -> bool:
    try:
        return _libc().prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06  # classic BPF opcodes (with BPF_K)
_SECCOMP_ABI = {  # the machine's audit arch and its syscall numbers
    "x86_64": (0xC000003E, {"unshare": 272, "clone": 56, "clone3": 435, "setns": 308}),
    "aarch64": (0xC00000B7, {"unshare": 97, "clone": 220, "clone3": 435, "setns": 268}),
}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def user_namespace_filter(machine: str = os.uname().machine) -> Any:
    """A seccomp filter (built before forking) that refuses new user namespaces: unshare(2) and clone(2) with
    CLONE_NEWUSER and setns(2) fail with EPERM, clone3(2) (whose flags are in memory a filter cannot read) with ENOSYS
    (the C library then uses clone), and any syscall of another ABI (i386, x32) with ENOSYS. None on a machine whose
    syscall numbers are not known here. Without it a job of a pool run as root, whose worker is in no user namespace,
    could make one of its own and hold every capability there (issue 38)."""
    if machine not in _SECCOMP_ABI:
        return None
    arch, numbers = _SECCOMP_ABI[machine]
    eperm, enosys = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.ENOSYS
    program = [
        (_LD_W_ABS, 0, 0, 4),  # 0: the audit arch
        (_JEQ, 1, 0, arch),  # 1: ours -> 3
        (_RET, 0, 0, enosys),  # 2: another ABI (i386 by int 0x80)
        (_LD_W_ABS, 0, 0, 0),  # 3: the syscall number
        (_JGE, 7, 0, _X32_SYSCALL_BIT),  # 4: x32 -> 12
        (_JEQ, 6, 0, numbers["clone3"]),  # 5: -> 12
        (_JEQ, 6, 0, numbers["setns"]),  # 6: -> 13
        (_JEQ, 2, 0, numbers["unshare"]),  # 7: -> 10
        (_JEQ, 1, 0, numbers["clone"]),  # 8: -> 10
        (_RET, 0, 0, _RET_ALLOW),  # 9
        (_LD_W_ABS, 0, 0, 16),  # 10: the flags (args[0], its low 32 bits)
        (_JSET, 1, 2, _CLONE_NEWUSER),  # 11: a new user namespace -> 13, else -> 14
        (_RET, 0, 0, enosys),  # 12
        (_RET, 0, 0, eperm),  # 13
        (_RET, 0, 0, _RET_ALLOW),  # 14
    ]
    return _compiled(program)


def _compiled(program: list[tuple[int, int, int, int]]) -> Any:
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    return filters, _SockFprog(len(program), filters)


def install_filter(compiled: Any) -> None:
    """Install a seccomp filter from `user_namespace_filter` in this process (and every process it starts)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    _, fprog = compiled
    if _libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise PermissionError(f"seccomp filter refused: {os.strerror(ctypes.get_errno())}")


_MS_NOSUID, _MS_NODEV = 2, 4
CAPABILITY_NUMBERS = {
    "CAP_CHOWN": 0,
    "CAP_DAC_OVERRIDE": 1,
    "CAP_DAC_READ_SEARCH": 2,
    "CAP_FOWNER": 3,
    "CAP_KILL": 5,
    "CAP_SETGID": 6,
    "CAP_SETUID": 7,
    "CAP_SYS_ADMIN": 21,
}


def mount_scratch(targets: tuple[str, ...], size_bytes: int, inodes: int) -> None:
    """Mount a fresh tmpfs of `size_bytes` and at most `inodes` files on each of `targets` (inside the boundary,
    over bubblewrap's, whose tmpfs takes no inode bound). Needs CAP_SYS_ADMIN; raises OSError."""
    options = f"size={size_bytes},nr_inodes={inodes},mode=1777".encode()
    for target in targets:
        if _libc().mount(b"tmpfs", target.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"mounting the scratch tmpfs on {target}: {os.strerror(number)}")


def keep_capabilities(names: tuple[str, ...]) -> None:
    """Cut this process's effective and permitted capabilities down to `names` (none inheritable)."""
    bits = 0
    for name in names:
        bits |= 1 << CAPABILITY_NUMBERS[name]
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    set_capabilities((header, (ctypes.c_uint32 * 6)(bits, bits, 0, 0, 0, 0)))


def disarm_sockets() -> None:
    """Make socket creation raise in this process (used where no network namespace is available)."""
    import _socket
    import socket

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("network access is disabled in the sandbox")

    for module in (socket, _socket):
        for name in ("socket", "socketpair", "fromfd", "create_connection", "create_server", "getaddrinfo"):
            if hasattr(module, name):
                setattr(module, name, refuse)


def _keyctl(*args: int) -> int:
    """keyctl(2); -1 with errno ENOSYS where its number is not known here."""
    if _SYS_KEYCTL is None:
        ctypes.set_errno(errno.ENOSYS)
        return -1
    return int(_libc().syscall(ctypes.c_long(_SYS_KEYCTL), *(ctypes.c_long(a) for a in args)))


def new_session_keyring() -> None:
    """Join a new, empty session keyring (before the job runs): a process inherits its parent's, and possessing it
    lets any uid read the caller's keys and leave keys there that outlive the job. Unavailable keyrings (no
    keyctl, or refused by a seccomp filter) are fine: the job cannot use them either."""
    if _keyctl(_KEYCTL_JOIN_SESSION_KEYRING, 0) < 0 and ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM):
        raise PermissionError(f"no session keyring of its own: {os.strerror(ctypes.get_errno())}")


def sealed_session_keyring() -> None:
    """Join a new, empty session keyring that only its owner may use, not its possessors: the jobs, which inherit
    it but run as other uids, can neither read it nor link keys into it for a later job (they may join keyrings of
    their own, which die with them). Unavailable keyrings are fine, as in `new_session_keyring`."""
    serial = _keyctl(_KEYCTL_JOIN_SESSION_KEYRING, 0)
    if serial < 0:
        if ctypes.get_errno() in (errno.ENOSYS, errno.EPERM):
            return
        raise PermissionError(f"no session keyring of its own: {os.strerror(ctypes.get_errno())}")
    if _keyctl(_KEYCTL_SETPERM, serial, _KEY_USR_ALL) < 0:
        raise PermissionError(f"cannot seal the session keyring: {os.strerror(ctypes.get_errno())}")


def invalidate_user_keyrings() -> None:
    """Invalidate this uid's user, user-session and persistent keyrings (kernel objects of the uid, not of any
    namespace: they outlive its processes, and a later job of the same uid would find what they hold). Run after
    `new_session_keyring`: the persistent keyring, linked into that session keyring, is possessed, which its
    invalidation needs. Serials first: looking either of the first two up by its special id makes both anew."""
    user = _keyctl(_KEYCTL_GET_KEYRING_ID, _KEY_SPEC_USER_KEYRING, 1)
    session = _keyctl(_KEYCTL_GET_KEYRING_ID, _KEY_SPEC_USER_SESSION_KEYRING, 1)
    persistent = _keyctl(_KEYCTL_GET_PERSISTENT, -1, _KEY_SPEC_SESSION_KEYRING)
    for key in (persistent, session, user):
        if key > 0:
            _keyctl(_KEYCTL_INVALIDATE, key)


def address_space() -> int:
    """Current virtual memory size of this process in bytes."""
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 256).split()[0]) * resource.getpagesize()
    finally:
        os.close(fd)


Limits = tuple[tuple[int, tuple[int, int]], ...]


def job_limits(config: SandboxConfig, own_uid: bool, base_address_space: int) -> Limits:
    """The rlimits of a job forked from a process that maps `base_address_space` bytes (computed before the fork)."""
    memory = base_address_space + config.memory_mb * 1024 * 1024
    cpu = config.cpu_limit_s
    file_size = config.file_size_mb * 1024 * 1024
    limits = [
        (resource.RLIMIT_AS, (memory, memory)),
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_FSIZE, (file_size, file_size)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_MSGQUEUE, (0, 0)),  # no POSIX message queues (they would outlive the job)
    ]
    if own_uid:
        limits.append((resource.RLIMIT_NPROC, (config.max_processes, config.max_processes)))
    return tuple(limits)


def set_limits(limits: Limits) -> None:
    for which, values in limits:
        resource.setrlimit(which, values)


def drop_privileges(uid: int, capability: Any = None) -> None:
    """Become `uid`/gid `uid` with no groups and no capabilities (or, with `capability`, CAP_DAC_READ_SEARCH only).

    Inside the boundary setresuid from root clears every capability. With weak isolation the supervisor set
    PR_SET_KEEPCAPS so that the permitted set survives setresuid; capset then cuts it down to reading any file (to
    import from root-only paths), and a failure there must stop the job (it would keep every capability).
    """
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if capability is not None and _libc().capset(*capability) != 0:
        raise PermissionError(f"capset failed: {os.strerror(ctypes.get_errno())}")


def read_search_capability() -> Any:
    """capset(2) arguments that keep only CAP_DAC_READ_SEARCH (effective and permitted), built before forking."""
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    bit = 1 << _CAP_DAC_READ_SEARCH
    return header, (ctypes.c_uint32 * 6)(bit, bit, 0, 0, 0, 0)  # effective, permitted, inheritable (x2)


def no_capabilities() -> Any:
    """capset(2) arguments that clear every capability, built before forking."""
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    return header, (ctypes.c_uint32 * 6)(0, 0, 0, 0, 0, 0)


def set_capabilities(capability: Any) -> None:
    if _libc().capset(*capability) != 0:
        raise PermissionError(f"capset failed: {os.strerror(ctypes.get_errno())}")
