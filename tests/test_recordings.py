"""Every output a CPU build shows is committed and matches its source, whatever machine runs the tests.

GPU outputs can only be recorded on a GPU; CPU outputs are committed too, so that a newcomer's
first build shows the whole site without running every example. (A GPU build runs its own
device's outputs live, so nothing more needs committing for it.)
"""

import pytest

from execdocs import store
from execdocs.examples import all_examples
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


HOST_KEYS = ("host", "host_small_op_us", "host_small_compiled_call_us")


def host_gaps(stamp: dict) -> list[str]:
    return [key for key in HOST_KEYS if key not in stamp]


GPU_RECORDINGS = [
    (example, result) for example in all_examples() if (result := store.load_committed(example, "cuda")) is not None
]


@pytest.mark.parametrize(("example", "result"), GPU_RECORDINGS, ids=[example.name for example, _ in GPU_RECORDINGS])
def test_a_gpu_recording_names_its_host_and_its_yardstick(example, result):
    """A launch-bound time can't be read without the host it ran on (docs/benchmarking/host.md)."""
    missing = host_gaps(result.stamp)
    assert not missing, (
        f"{store.committed_path(example, 'cuda')}: its stamp lacks {', '.join(missing)}; record it again on the GPU "
        "with `nox -s record` (the runner adds them)"
    )


def test_a_planted_gpu_stamp_without_the_yardstick_is_found():
    host_only = {"gpu": "NVIDIA H100 80GB HBM3", "host": "Intel(R) Xeon(R) Processor, 16 cores"}
    assert host_gaps(host_only) == ["host_small_op_us", "host_small_compiled_call_us"]
    assert host_gaps({**host_only, "host_small_op_us": "6.8", "host_small_compiled_call_us": "27.6"}) == []
