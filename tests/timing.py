"""How the suite spends its time: timeouts, and what is over its time budget.

A pytest plugin (loaded by conftest.py; how the tests are shared out to workers: shares.py):
* **Timeouts** (pytest-timeout): a test that asks for a heavy session fixture may take that fixture's
  limit (``HEAVY_FIXTURES``); every other test the ``timeout`` of pyproject.toml.
* **Budgets**: every test whose call, and every fixture whose own setup (without the fixtures it asks
  for), took longer than its budget, listed at the end of the run. It never fails a run: a slow machine
  makes everything slower, and CI must still pass there; it makes a slow test visible when it is written.
"""

from __future__ import annotations

import time

import pytest

TEST_BUDGET_SECONDS = 20.0  # a test's own call
FIXTURE_BUDGET_SECONDS = 45.0  # a fixture's own setup (a vLLM server start fits)
FIXTURE_BUDGETS = {  # fixtures that are slow by design, each built once per run
    "deployed_pipeline": 480.0,  # the suite's one pipeline run (tests/pipeline_run.py)
    "smollm2_run": 150.0,  # the real checkpoint's smoke run (conftest.py)
    "toy_target_greedy": 90.0,  # one-sequence target greedy on the whole toy test split
    "mined_toy": 90.0,  # Algorithm 1 on vLLM, for the heads of the plugin's engine tests
}
HEAVY_FIXTURES = {"deployed_pipeline": 1800, "smollm2_run": 900}  # a test asking for one may take this long
FIXTURE_SECONDS = (
    "fixture_seconds"  # user property: (fixture, seconds) of a setup (reaches xdist's controller)
)


class TimingReport:
    """Collects each test's call time and each fixture's setup time; prints what is over budget."""

    def __init__(self) -> None:
        self.calls: dict[str, float] = {}
        self.fixtures: dict[str, float] = {}

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call":
            self.calls[report.nodeid] = report.duration
        for key, value in report.user_properties:
            if key == FIXTURE_SECONDS:
                name, seconds = value
                self.fixtures[name] = max(self.fixtures.get(name, 0.0), seconds)

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


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """A fixture's own setup time, kept on the test that built it (its report carries it to the controller)."""
    start = time.perf_counter()
    yield
    item = request._pyfuncitem  # the test being set up (request.node is the session for session fixtures)
    item.user_properties.append((FIXTURE_SECONDS, (fixturedef.argname, time.perf_counter() - start)))


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without workers) reports
        config.pluginmanager.register(TimingReport(), "timing-report")


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        names = list(getattr(item, "fixturenames", ()))
        limits = [HEAVY_FIXTURES[name] for name in names if name in HEAVY_FIXTURES]
        if limits and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(sum(limits)))
