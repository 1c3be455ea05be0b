"""Every output a page shows from another kind of device is committed and matches its source."""

import pytest

from execdocs import store
from execdocs.environment import can_run, machine_device
from execdocs.pages import all_references, default_device, problem

RECORDED = [
    (reference, device)
    for reference in all_references()
    if reference.shows_output
    for device in [reference.device or default_device(reference.example, machine_device())]
    if not can_run(device)
]


@pytest.mark.skipif(not RECORDED, reason="this machine runs every device the pages show")
@pytest.mark.parametrize(
    ("reference", "device"), RECORDED, ids=[f"{ref.block_id}@{device}" for ref, device in RECORDED] or None
)
def test_recording_is_committed_and_fresh(reference, device):
    message = problem(reference, device, store.load_committed(reference.example, device), can_run_here=False)
    if message:
        pytest.fail(message, pytrace=False)
