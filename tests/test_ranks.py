"""The distributed chapter's ranks (examples/distributed/_ranks.py) never hang a build: a rank that raises
fails the run with its own file and line and stops the others, a rank that hangs is stopped at the time
limit, and two groups at once do not collide."""

import os
import sys
import threading
import time

import pytest

from execdocs.layout import EXAMPLES

sys.path.insert(0, str(EXAMPLES))
from distributed import _ranks  # noqa: E402

# A rank's script: rank 1 raises, or hangs, where the argument says; every rank waits for the others first.
SCRIPT = """\
import sys
import time

import torch.distributed as dist

from distributed import _ranks


def work(rank, world_size, behaviour):
    dist.barrier()
    if rank == 1 and behaviour == "raise":
        raise ValueError("rank 1 was told to fail")
    if rank == 1 and behaviour == "hang":
        time.sleep(600)
    dist.barrier()  # the other ranks wait here for rank 1, as in a collective
    return {"rank": rank, "world_size": world_size}


if _ranks.is_rank_process():
    _ranks.rank_main(work)
"""
RAISING_LINE = SCRIPT.splitlines().index('        raise ValueError("rank 1 was told to fail")') + 1


@pytest.fixture
def script(tmp_path, monkeypatch):
    path = tmp_path / "examples" / "demo" / "ranks.py"
    path.parent.mkdir(parents=True)
    path.write_text(SCRIPT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(EXAMPLES), os.environ.get("PYTHONPATH")])))
    return str(path)


def test_every_rank_returns_its_result(script):
    assert _ranks.run_ranks(script, 2, "ok") == [{"rank": 0, "world_size": 2}, {"rank": 1, "world_size": 2}]


def test_a_rank_that_raises_fails_the_run_with_its_file_and_line_and_stops_the_others(script):
    started = time.monotonic()
    with pytest.raises(_ranks.RankFailed) as failure:
        _ranks.run_ranks(script, 2, "raise", timeout_s=120)
    message = str(failure.value)
    assert f"rank 1 failed at examples/demo/ranks.py:{RAISING_LINE}" in message
    assert "ValueError: rank 1 was told to fail" in message
    assert time.monotonic() - started < 60, "rank 0, waiting for rank 1 in a collective, was stopped, not awaited"


def test_a_rank_that_hangs_is_stopped_at_the_time_limit(script):
    with pytest.raises(_ranks.RankFailed, match=r"ranks still running after 5 s: 0, 1; every rank was stopped"):
        _ranks.run_ranks(script, 2, "hang", timeout_s=5)


def test_two_groups_at_once_do_not_collide(script):
    results = []
    threads = [threading.Thread(target=lambda: results.append(_ranks.run_ranks(script, 2, "ok"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 2 and all(len(result) == 2 for result in results)


def test_ranks_over_nccl_on_too_few_gpus_are_refused_before_any_starts(script, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(_ranks.RankFailed, match=r"^2 ranks over NCCL need 2 GPUs, one each, and this machine has 1"):
        _ranks.run_ranks(script, 2, "ok", backend="nccl")
