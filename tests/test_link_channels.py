"""The link page's conclusion rests on two recordings, two and four ranks, and no single run can check it: NCCL builds
as many channels at both counts, and at each forced count four ranks still move more, so the channels do not explain
why four ranks reach more bus bandwidth. A re-recording that no longer shows it fails here."""

import re

from execdocs import store
from execdocs.examples import Example

CHANNELS_LINE = re.compile(
    r"^\s+(?P<asked>NCCL's choice|forced to \d+)\s+(?P<built>\d+) channels\s+(?P<gbs>[\d.]+) GB/s$", re.M
)


def channels(name: str) -> dict[str, tuple[int, float]]:
    """What the recording of `name` printed for each way of choosing the channels: (channels built, GB/s)."""
    text = store.load_committed(Example(name), "cuda").sections["channels"]
    return {m["asked"]: (int(m["built"]), float(m["gbs"])) for m in CHANNELS_LINE.finditer(text)}


def test_the_channels_do_not_explain_why_four_ranks_move_more():
    two, four = channels("distributed/link"), channels("distributed/link@4gpus")
    assert two.keys() == four.keys() and len(two) == 4
    assert two["NCCL's choice"][0] == four["NCCL's choice"][0], "NCCL builds as many channels at both counts"
    for asked in two:
        assert four[asked][1] > two[asked][1], f"{asked}: four ranks move more than two at the same channels"
