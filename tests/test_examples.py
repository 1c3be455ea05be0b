"""Every example runs, once per test run, on this machine's device, and its assertions hold."""

import pytest

from execdocs import runner
from execdocs.environment import can_run, machine_device, machine_gpus
from execdocs.examples import all_examples


@pytest.mark.parametrize("example", all_examples(), ids=lambda example: example.name)
def test_example_runs(example):
    device = machine_device()
    if not example.runs_on(device):
        pytest.skip(f"runs only on {', '.join(example.devices)}; test_recordings checks its recording")
    if not can_run(device, example.gpus):
        pytest.skip(
            f"needs {example.gpus} GPUs, this machine has {machine_gpus()}; test_recordings checks the recording"
        )
    result = runner.ensure(example, device)
    if not result.ok:
        error = result.error
        pytest.fail(f"{error['location']}: {error['summary']}\n\n{error['traceback']}", pytrace=False)
