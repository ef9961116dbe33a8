"""`kt sandbox run --explain`: the isolation in force, as configured and as a probe job sees it."""

from __future__ import annotations

import os

from kt_train.sandbox.boundary import JOB_DIR, SCRATCH_DIRS, isolation
from kt_train.sandbox.cgroup import JobCgroup, job_memory_bytes
from kt_train.sandbox.config import SandboxConfig, Verdict

_PROBE = """
import os
def probe():
    top = sorted(os.listdir("/"))
    return {
        "uid": os.getuid(),
        "cwd": os.getcwd(),
        "environment": sorted(os.environ),
        "root": top,
        "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "hostname": os.uname().nodename,
        "tmp_inodes": os.statvfs("/tmp").f_files,
    }
"""


def explain(config: SandboxConfig | None = None) -> str:
    """A readable description of the boundary, the limits and what a job sees (runs one probe job)."""
    from kt_train.sandbox.pool import call_function

    config = config or SandboxConfig()
    boundary = isolation(config)
    group = JobCgroup.create(config, "explain")
    cgroup_limits = {k: v for k, v in group.limits.items() if not k.startswith("memory.")} if group else {}
    if group and any(k.startswith("memory.") for k in group.limits):
        cgroup_limits["memory"] = f"the worker's own use + {job_memory_bytes(config) // (1024 * 1024)} MiB"
    if group:
        group.close()
    lines = [f"isolation: {boundary.kind}" + (f" ({boundary.reason})" if boundary.reason else "")]
    if boundary.private_view:
        lines += [
            f"namespaces: {', '.join(boundary.namespaces)} (bubblewrap; the worker's namespace dies with the caller)",
            "visible, read-only: " + ", ".join(f"{inner}" for inner in sorted(set(boundary.binds.values()))),
            f"writable: {', '.join(SCRATCH_DIRS)} (private tmpfs of {config.tmp_size_mb} MiB each, emptied after "
            f"every job; working directory {JOB_DIR})",
            "also: /proc of the worker's pid namespace, a minimal /dev; nothing else (no home, checkout, cache, /etc)",
        ]
    else:
        lines.append("visible: the whole host filesystem (weak isolation: no private view)")
    uid = (
        "a uid no other running job has (one per worker), no capabilities" if os.geteuid() == 0 else "the caller's uid"
    )
    lines += [
        f"user: {uid}; PR_SET_NO_NEW_PRIVS; no new user namespaces (seccomp); environment PATH, LANG, HOME, TMPDIR "
        "only",
        f"network: {'allowed' if config.network else 'none (empty network namespace)'}",
        f"limits per process: address space {config.memory_mb} MiB over the interpreter's, "
        f"CPU {config.cpu_limit_s} s, file size {config.file_size_mb} MiB, no core files",
        "limits per job (cgroup): "
        + (", ".join(f"{k}={v}" for k, v in cgroup_limits.items()) if cgroup_limits else "none (no writable cgroup)"),
        f"CPU time: {config.timeout_s:g} s (wall-clock safety net {config.wall_limit_s:g} s, +{config.grace_s:g} s "
        f"grace); output kept: {config.max_output_bytes} "
        f"bytes of stdout and of stderr; result: at most {config.max_result_bytes} bytes",
    ]
    result = call_function(_PROBE, "probe", (), config)
    if result.verdict == Verdict.OK and isinstance(result.return_value, dict):
        seen = result.return_value
        lines += [
            "a probe job sees:",
            f"  uid {seen['uid']}, cwd {seen['cwd']}, hostname {seen['hostname']}",
            f"  / holds: {', '.join(seen['root'])}",
            f"  environment variables: {', '.join(seen['environment'])}",
            f"  processes in /proc: {len(seen['processes'])} ({', '.join(map(str, seen['processes']))})",
            f"  /tmp holds at most {seen['tmp_inodes']} files"
            + ("" if seen["tmp_inodes"] <= config.tmp_inodes else f" (not bounded to {config.tmp_inodes} here)"),
        ]
    else:
        lines.append(f"the probe job failed: {result.verdict} {result.error_message or ''}")
    return "\n".join(lines)


__all__ = ["explain"]
