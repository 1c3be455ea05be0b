"""Every example runs, once per test run, on this machine's device, and its assertions hold."""

import pytest

from execdocs import runner
from execdocs.environment import machine_device
from execdocs.examples import all_examples


@pytest.mark.parametrize("example", all_examples(), ids=lambda example: example.name)
def test_example_runs(example):
    device = machine_device()
    if not example.runs_on(device):
        pytest.skip(f"runs only on {', '.join(example.devices)}; test_recordings checks its recording")
    result = runner.ensure(example, device)
    if not result.ok:
        error = result.error
        pytest.fail(f"{error['location']}: {error['summary']}\n\n{error['traceback']}", pytrace=False)
