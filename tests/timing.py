"""Where the suite's time goes: every test and fixture over its budget, listed at the end of the run.

A pytest plugin (loaded by conftest.py). It never fails a run: a slow machine makes everything slower,
and CI must still pass there. It only makes a slow test visible when it is written. Budgets are seconds
on 2 CPU cores; a fixture's time is its own setup, without the fixtures it asks for. A hung test is
stopped by pytest-timeout instead (``timeout`` in pyproject.toml, ``HEAVY_FIXTURES`` below).
"""

from __future__ import annotations

import time

import pytest

TEST_BUDGET_SECONDS = 20.0  # a test's own call
FIXTURE_BUDGET_SECONDS = 45.0  # a fixture's own setup (a vLLM engine start fits)
FIXTURE_BUDGETS = {  # fixtures that are slow by design, each shared by the whole session
    "deployed_pipeline": 480.0,  # the suite's one pipeline run (tests/pipeline_run.py)
    "smollm2_run": 150.0,  # the real checkpoint's smoke run (conftest.py)
    "target_head_path": 90.0,  # Algorithm 1 on vLLM and a head, for the plugin's engine tests
}
HEAVY_FIXTURES = {"deployed_pipeline": 1800, "smollm2_run": 900}  # a test asking for one may take this long


class TimingReport:
    """Collects each test's call time and each fixture's setup time; prints what is over budget."""

    def __init__(self) -> None:
        self.calls: dict[str, float] = {}
        self.fixtures: dict[str, float] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        start = time.perf_counter()
        yield
        name = fixturedef.argname
        self.fixtures[name] = max(self.fixtures.get(name, 0.0), time.perf_counter() - start)

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call":
            self.calls[report.nodeid] = report.duration

    def over_budget(self) -> list[tuple[float, float, str]]:
        """(seconds, budget, what) of every test and fixture over its budget, slowest first."""
        rows = [(s, TEST_BUDGET_SECONDS, test) for test, s in self.calls.items() if s > TEST_BUDGET_SECONDS]
        for name, seconds in self.fixtures.items():
            budget = FIXTURE_BUDGETS.get(name, FIXTURE_BUDGET_SECONDS)
            if seconds > budget:
                rows.append((seconds, budget, f"fixture {name}"))
        return sorted(rows, reverse=True)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        rows = self.over_budget()
        if not rows:
            return
        terminalreporter.section("over their time budget (tests/timing.py; reported, never failed)")
        for seconds, budget, what in rows:
            terminalreporter.write_line(f"{seconds:8.1f} s  (budget {budget:5.0f} s)  {what}")


def pytest_configure(config) -> None:
    config.pluginmanager.register(TimingReport(), "timing-report")


def pytest_collection_modifyitems(items) -> None:
    """A test that asks for a heavy session fixture may pay for its setup: give it that fixture's timeout."""
    for item in items:
        limits = [
            HEAVY_FIXTURES[name] for name in getattr(item, "fixturenames", ()) if name in HEAVY_FIXTURES
        ]
        if limits and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(sum(limits)))
