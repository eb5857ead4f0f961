"""Sandbox launcher, run as ``python -I -S launcher.py CONFIG_JSON`` (standard library only).

It builds the process tree launcher -> monitor -> harness:

* launcher: enters new network, PID and mount namespaces (inside a new user namespace when not
  root), forks the monitor and waits for it. On SIGTERM (the parent's timeout) it kills the
  monitor, which, as PID 1 of the new PID namespace, takes every process of the run with it.
  When the monitor ends it kills the run's process group (the monitor's), and, as a child
  subreaper that inherits every orphan of the run, reaps them and hunts down, for up to REAP_S
  seconds, processes that left the group (without a PID namespace, that is the only cleanup).
* monitor: in the mount namespace, makes every mount read-only except the working directory
  and mounts a fresh /proc; reports the isolation it got, forks the harness, waits for it and
  reports its exit status.
* harness process: drops to the unprivileged user (when root), sets the resource limits and
  ``no_new_privs``, then execs ``python -I -S -B -c HARNESS``.

Where a namespace cannot be created (no root and no unprivileged user namespaces), the run goes
on without it, the "isolation" report line says so, and the harness falls back to audit hooks.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 0x400, 0x800, 0x1000, 0x4000
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 0x40000, 0x200000, 0x1000000
# per-mount options kept when remounting read-only (a user namespace may not clear them)
KEPT_MOUNT_OPTIONS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
REAP_S = 2.0  # how long the launcher hunts processes that left the run's group
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38


def _load_libc():
    """The C library through ctypes, or None where ctypes is unavailable."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


LIBC = _load_libc()


def _call(name: str, *args: object) -> bool:
    """Call a libc function; whether it returned 0."""
    return LIBC is not None and getattr(LIBC, name)(*args) == 0


def _report(fd: int, record: dict) -> None:
    os.write(fd, (json.dumps(record) + "\n").encode())


def _write_file(path: str, text: str) -> bool:
    try:
        Path(path).write_text(text)
        return True
    except OSError:
        return False


def enter_namespaces(enabled: bool) -> set[str]:
    """Unshare network, PID and mount namespaces (or just the network one); the names entered."""
    if not enabled or LIBC is None:
        return set()
    root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    user = 0 if root else CLONE_NEWUSER
    for flags, names in (
        (CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWNS, {"net", "pid", "mount"}),
        (CLONE_NEWNET, {"net"}),
    ):
        if _call("unshare", user | flags):
            if not root:  # keep our own ids inside the user namespace
                _write_file("/proc/self/setgroups", "deny")
                _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
                _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
            return names | ({"user"} if not root else set())
    return set()


def _mount_points() -> list[tuple[str, list[str]]]:
    """(mount point, per-mount options) of every mount, from /proc/self/mountinfo."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = fields[4]
        for escaped, character in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
            point = point.replace(escaped, character)
        mounts.append((point, fields[5].split(",")))
    return mounts


def make_mounts_read_only(workdir: str, new_proc: bool) -> bool:
    """Remount everything read-only except ``workdir``; whether the root mount became read-only."""
    if not _call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None):
        return False
    if not _call("mount", workdir.encode(), workdir.encode(), None, MS_BIND | MS_REC, None):
        return False
    os.chdir(workdir)  # the working directory is now the writable bind mount
    if new_proc:
        _call("mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    root_read_only = False
    for point, options in _mount_points():
        if point == workdir or point.startswith(workdir.rstrip("/") + "/"):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= KEPT_MOUNT_OPTIONS.get(option, 0)
        done = _call("mount", None, point.encode(), None, flags, None)
        if point == "/":
            root_read_only = done
    return root_read_only


def _die_with_parent(parent_pid: int | None) -> None:
    """Get SIGKILL when the parent dies; exit now if it already has."""
    _call("prctl", PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def _count_processes(uid: int) -> int:
    """Processes the user ``uid`` has now (RLIMIT_NPROC counts them all)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def set_limits(limits: dict, process_base: int) -> None:
    """Apply the resource limits (never above the current hard limits)."""
    wanted = {
        resource.RLIMIT_CPU: (limits["cpu_s"], limits["cpu_s"] + 1),
        resource.RLIMIT_AS: (limits["memory_bytes"],) * 2,
        resource.RLIMIT_FSIZE: (limits["file_size_bytes"],) * 2,
        resource.RLIMIT_NPROC: (process_base + limits["processes"],) * 2,
        resource.RLIMIT_NOFILE: (limits["open_files"],) * 2,
        resource.RLIMIT_CORE: (0, 0),
    }
    for kind, (soft, hard) in wanted.items():
        _, current_hard = resource.getrlimit(kind)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(kind, (soft, hard))


def start_harness(config: dict, isolation: dict, monitor_pid: int) -> None:
    """In the harness process: drop privileges, limit resources, exec the harness (never returns)."""
    try:
        _die_with_parent(monitor_pid)
        user = config["user"]
        process_base = 0
        if user is not None and os.getuid() == 0:
            os.setgroups([])
            os.setgid(user)
            os.setuid(user)
        elif "user" not in isolation["namespaces"]:
            process_base = _count_processes(os.getuid())
        set_limits(config["limits"], process_base)
        _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        os.umask(0o077)
        interpreter = config["interpreter"]
        arguments = [config["job_fd"], config["report_fd"], json.dumps(isolation), config["workdir"]]
        os.execv(interpreter, [interpreter, "-I", "-S", "-B", "-c", config["harness"], *map(str, arguments)])
    except BaseException as error:  # exec failed: say why, the parent treats the run as unusable
        try:
            _report(config["report_fd"], {"exec_error": f"{type(error).__name__}: {error}"})
        finally:
            os._exit(127)


def monitor(config: dict, namespaces: set[str], launcher_pid: int) -> None:
    """In the monitor process: set up mounts, run the harness, report its exit status."""
    _die_with_parent(None if "pid" in namespaces else launcher_pid)
    read_only = "mount" in namespaces and make_mounts_read_only(config["workdir"], "pid" in namespaces)
    dropped = config["user"] is not None and os.getuid() == 0
    isolation = {
        "network": "namespace" if "net" in namespaces else "audit-hook",
        "filesystem": "read-only-mounts" if read_only else "audit-hook",
        "processes": "pid-namespace" if "pid" in namespaces else "process-group",
        "user": f"uid {config['user']}" if dropped else "caller",
        "namespaces": sorted(namespaces),
    }
    _report(config["report_fd"], {"isolation": isolation})
    monitor_pid = os.getpid()
    child = os.fork()
    if child == 0:
        start_harness(config, isolation, monitor_pid)
    while True:  # as PID 1 of a PID namespace it also reaps the run's orphans
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    if os.WIFSIGNALED(status):
        _report(config["report_fd"], {"status": {"signal": os.WTERMSIG(status)}})
    else:
        _report(config["report_fd"], {"status": {"code": os.WEXITSTATUS(status)}})
    os._exit(0)


def _children() -> list[int]:
    """This process's children (live or not yet reaped)."""
    pid = os.getpid()
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:  # no CONFIG_PROC_CHILDREN: read every process's parent
        children = []
        for entry in Path("/proc").iterdir():
            with suppress(OSError, ValueError, IndexError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    children.append(int(entry.name))
        return children


def _kill_group(group: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)  # atomic with respect to fork: a fork bomb in the group dies at once


def reap_descendants(seconds: float) -> None:
    """Kill and reap every process left under the launcher (orphans reparent to it, a subreaper)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        children = _children()
        if not children:
            return
        for child in children:
            with suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        time.sleep(0.001)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:  # every child that has died by now
                pass
        except ChildProcessError:
            return


def main() -> None:
    config = json.loads(sys.argv[1])
    namespaces = enter_namespaces(config["namespaces"])
    launcher_pid = os.getpid()
    _call("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child = os.fork()
    if child == 0:
        try:
            os.setpgid(0, 0)  # the run's own process group, which the launcher is not part of
            monitor(config, namespaces, launcher_pid)
        finally:
            os._exit(70)

    def stop(signum: int, frame: object) -> None:
        _kill_group(child)
        with suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)

    signal.signal(signal.SIGTERM, stop)
    os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # not reaped yet: its group id stays reserved
    _kill_group(child)  # whatever the program left running in the run's group
    _, status = os.waitpid(child, 0)
    reap_descendants(REAP_S)
    os._exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1)


if __name__ == "__main__":
    main()
