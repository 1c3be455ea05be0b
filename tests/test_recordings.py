"""Every output a CPU build shows is committed and matches its source, whatever machine runs the tests.

GPU outputs can only be recorded on a GPU; CPU outputs are committed too, so that a newcomer's
first build shows the whole site without running every example. (A GPU build runs its own
device's outputs live, so nothing more needs committing for it.)
"""

import pytest

from execdocs import store
from execdocs.pages import all_references, default_device, problem

SHOWN = list(
    dict.fromkeys(
        (reference, device)
        for reference in all_references()
        if reference.shows_output
        for device in [reference.device or default_device(reference.example, "cpu")]
    )
)


@pytest.mark.parametrize(("reference", "device"), SHOWN, ids=[f"{ref.block_id}@{device}" for ref, device in SHOWN])
def test_committed_output_is_fresh(reference, device):
    message = problem(reference, device, store.load_committed(reference.example, device), can_run_here=False)
    if message:
        pytest.fail(message, pytrace=False)
