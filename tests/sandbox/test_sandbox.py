import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autojudge.sandbox import Sandbox, SandboxJob, SandboxLimits, SandboxPool

LIMITS = SandboxLimits(timeout_s=1.0, startup_s=1.0, memory_mb=256, processes=32)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(LIMITS)


@pytest.fixture(scope="module")
def fallback() -> Sandbox:
    """The sandbox as it runs where no namespaces can be created: audit hooks only."""
    return Sandbox(LIMITS, namespaces=False)


@pytest.fixture(scope="module", autouse=True)
def own_temporary_directory():
    """This module's sandboxed runs work under a directory of its own, so that another process's runs (a
    pytest-xdist worker mining code meanwhile) are not taken for this module's leftovers. It sits in the
    system's temporary directory: the sandbox user must be able to pass through every directory above."""
    previous, own = tempfile.tempdir, tempfile.mkdtemp(prefix="autojudge-sandbox-tests-")
    Path(own).chmod(0o711)
    tempfile.tempdir = own
    yield
    tempfile.tempdir = previous
    shutil.rmtree(own, ignore_errors=True)


def _sandbox_processes() -> list[int]:
    """Processes of this module's sandboxed runs still alive (the harness's command line names its
    working directory, under this module's temporary directory)."""
    marker = f"{tempfile.gettempdir()}/autojudge-sandbox-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def assert_parent_fine() -> None:
    """The test process can still start processes, and no sandboxed process outlived its run."""
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0
    deadline = time.monotonic() + 2
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandbox_processes() == []


def run(sandbox: Sandbox, program: str, *tests: str) -> tuple[str, ...]:
    result = sandbox.run(SandboxJob(program, tests or ("pass",)))
    return result.outcomes


def test_outcome_classes(sandbox):
    program = "def f(x):\n    return 10 // x\n"
    tests = ("assert f(5) == 2", "assert f(5) == 3", "f(0)", "f(None)")
    assert run(sandbox, program, *tests) == ("pass", "fail", "ZeroDivisionError", "TypeError")
    assert run(sandbox, "def f(x) return x", "assert f(1) == 1", "pass") == ("syntax_error", "syntax_error")
    assert run(sandbox, "x = 1 / 0", "pass", "pass") == ("ZeroDivisionError", "ZeroDivisionError")
    assert run(sandbox, "import os", "pass", "os._exit(3)", "pass") == ("pass", "exited", "not_run")
    assert run(sandbox, "import sys", "sys.exit(0)") == ("SystemExit",)


def test_stdin_stdout_job(sandbox):
    program = "a, b = map(int, input().split())\nprint(a + b)\n"
    assert sandbox.run(SandboxJob(program, stdin="2 3\n", expected_stdout="5\n")).outcomes == ("pass",)
    assert sandbox.run(SandboxJob(program, stdin="2 3\n", expected_stdout="6")).outcomes == ("fail",)
    assert sandbox.run(SandboxJob(program, stdin="", expected_stdout="5")).outcomes == ("EOFError",)
    ended = "import sys\nprint(7)\nsys.exit()"
    assert sandbox.run(SandboxJob(ended, expected_stdout="7")).outcomes == ("pass",)


def test_infinite_loop_times_out(sandbox):
    started = time.monotonic()
    assert run(sandbox, "def f():\n    while True:\n        pass\n", "f()", "assert 1") == ("timeout", "pass")
    assert time.monotonic() - started < 2 * LIMITS.timeout_s + 1
    # a loop inside C code ignores the harness's alarm: the wall clock kills the whole run
    result = sandbox.run(SandboxJob("import itertools", ("sum(itertools.count())", "pass")))
    assert result.outcomes == ("timeout", "not_run") and result.timed_out
    assert_parent_fine()


def test_memory_bomb_is_a_memory_error(sandbox):
    assert run(sandbox, "x = 'a' * (2 << 30)") == ("memory",)
    assert run(sandbox, "def f():\n    return [0] * (1 << 31)\n", "f()", "pass") == ("memory", "pass")
    assert_parent_fine()


@pytest.mark.parametrize("isolation", ["namespaces", "fallback"])
def test_fork_bomb_is_contained(isolation, sandbox, fallback):
    box = sandbox if isolation == "namespaces" else fallback
    assert run(box, "import os\nwhile True:\n    os.fork()\n") == ("BlockingIOError",)
    assert_parent_fine()
    # one that ignores the failed forks keeps going until its time is up, then dies with all its children
    stubborn = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    assert run(box, stubborn) == ("timeout",)
    assert_parent_fine()
    # a child that leaves the process group is hunted down too
    escape = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
    assert run(box, escape) == ("pass",)
    assert_parent_fine()


@pytest.mark.parametrize("isolation", ["namespaces", "fallback"])
def test_no_network(isolation, sandbox, fallback):
    box = sandbox if isolation == "namespaces" else fallback
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        program = (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi')\n"
        )
        result = box.run(SandboxJob(program, ("pass",)))
        assert result.outcomes == ("network",)
        assert result.isolation["network"] == ("namespace" if isolation == "namespaces" else "audit-hook")
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert_parent_fine()


@pytest.mark.parametrize("isolation", ["namespaces", "fallback"])
def test_writes_outside_the_working_directory_fail(isolation, sandbox, fallback, tmp_path):
    box = sandbox if isolation == "namespaces" else fallback
    tmp_path.chmod(0o777)  # writable for everybody: only the sandbox can stop the write
    for target in (tmp_path / "escaped.txt", Path("/etc/autojudge-sandbox-test")):
        assert run(box, f"open({str(target)!r}, 'w').write('x')") == ("permission",)
        assert not target.exists()
    # inside its own (empty, temporary) working directory a program may write
    program = "import os, tempfile\nassert os.listdir('.') == []\nopen('out.txt', 'w').write('x')\n"
    program += "tempfile.mkstemp()\nprint(os.getcwd())\n"
    result = box.run(SandboxJob(program, ("pass",)))
    assert result.outcomes == ("pass",)
    assert not Path(result.stdout.strip()).exists()  # deleted afterwards
    assert_parent_fine()


def test_parent_environment_is_not_visible(sandbox, monkeypatch):
    monkeypatch.setenv("AUTOJUDGE_SECRET", "hunter2")
    program = "import os\nassert 'AUTOJUDGE_SECRET' not in os.environ, os.environ['AUTOJUDGE_SECRET']\n"
    program += (
        "assert set(os.environ) <= {'PATH', 'LANG', 'LC_ALL', 'HOME', 'TMPDIR', 'LC_CTYPE'}, os.environ\n"
    )
    assert run(sandbox, program) == ("pass",)
    if os.geteuid() == 0:  # as the unprivileged user it cannot read other processes' environments either
        peek = "import os\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
        peek += "        try:\n            assert b'hunter2' not in open(f'/proc/{p}/environ', 'rb').read()\n"
        peek += "        except OSError:\n            pass\n"
        assert run(sandbox, peek) == ("pass",)


def test_big_output_hits_the_file_size_limit(sandbox):
    small = Sandbox(SandboxLimits(timeout_s=1.0, startup_s=1.0, file_size_mb=1))
    assert run(small, "print('x' * (2 << 20))") == ("file_size",)
    assert sandbox.run(SandboxJob("print('hello')", ("pass",))).stdout == "hello\n"


def test_pool_runs_jobs_concurrently_in_order(sandbox):
    jobs = [
        SandboxJob(f"import time\ntime.sleep(0.5)\nx = {i}", (f"assert x == {i}", "assert x == -1"))
        for i in range(6)
    ]
    with SandboxPool(sandbox, workers=6) as pool:
        started = time.monotonic()
        results = pool.run(jobs)
        elapsed = time.monotonic() - started
    assert [r.outcomes for r in results] == [("pass", "fail")] * 6
    assert elapsed < 6 * 0.5
