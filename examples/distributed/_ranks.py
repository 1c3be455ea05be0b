"""Several processes that form one process group: the ranks of a small cluster, on one machine.

Over gloo, each rank is a CPU process; over NCCL, each rank is a process with a GPU of its own.
Import it from an example of this chapter: `from distributed import _ranks`. The example's file is
started once per rank with the argument `rank`; `rank_main` joins the group and runs the example's
function there; `run_ranks`, in the example's own process, starts the ranks and collects what each
returned. Every rank's process is stopped after a time limit, and a rank that raises stops the
others and fails the example with that rank's file and line.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

RANK_TIMEOUT_S = 300  # a rank's work takes seconds; one that hangs (say, waiting for a dead peer) must not hang
# NVLink multicast (NCCL's NVLS, and symmetric memory's) off in every rank: a program that uses it can leave a
# shared machine's GPUs out of service, and nothing here needs it.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
POLL_S = 0.05
# The last frame of a traceback that lies in an example of this project: where the rank failed.
EXAMPLE_FRAME = re.compile(r'File "(?:[^"]*/)?(examples/[^"]+)", line (\d+)')
# The line that names the exception ("ValueError: ..."), behind the "[rank1]:" prefix torch may add.
EXCEPTION_LINE = re.compile(r"^(?:\[rank\d+\]:)?\s*((?:\w+\.)*\w*(?:Error|Exception|Failed|Interrupt)\b.*)$")


class RankFailed(RuntimeError):
    """A rank raised or ran past its time limit; the message names the rank and where it failed."""


def is_rank_process() -> bool:
    return len(sys.argv) > 1 and sys.argv[1] == "rank"


def rank_main(work) -> None:
    """In a rank's process: join the group through the rendezvous file (over NCCL, on the GPU of the rank's
    number), run work(rank, world_size, *args), print its JSON-able result as the last line, leave the group."""
    import torch
    import torch.distributed as dist

    rank, world_size, backend, rendezvous, *args = sys.argv[2:]
    rank, world_size = int(rank), int(world_size)
    gpu = None
    if backend == "nccl":
        gpu = torch.device("cuda", rank)
        torch.cuda.set_device(gpu)
    # A file, not a TCP port, for the rendezvous: two examples or two test workers at once can't collide;
    # gloo's and NCCL's own connections then use ports the operating system picks.
    rendezvous = f"file://{rendezvous}"
    dist.init_process_group(backend, init_method=rendezvous, rank=rank, world_size=world_size, device_id=gpu)
    try:
        result = work(rank, world_size, *args)
    except BaseException:
        # Write the traceback before anything closes this rank's connections: its peers fail when they
        # close, and run_ranks names the rank whose error was written first.
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    dist.destroy_process_group()
    print(json.dumps(result))


# --8<-- [start:run-ranks]
def run_ranks(
    script: str, world_size: int, *args: str, timeout_s: float = RANK_TIMEOUT_S, backend: str = "gloo"
) -> list:
    """Start `script` once per rank (with `rank <rank> <world_size> <backend> <rendezvous> *args`) and return
    each rank's result, in rank order. Stops every rank when one fails or the time limit passes. Over
    "nccl", rank r runs on GPU r, so the machine needs `world_size` GPUs."""
    if backend == "nccl":
        import torch

        if torch.cuda.device_count() < world_size:
            raise RankFailed(
                f"{world_size} ranks over NCCL need {world_size} GPUs, one each, and this machine has "
                f"{torch.cuda.device_count()}: run it on a machine with {world_size} GPUs"
            )
    env = {**os.environ, **MULTICAST_OFF}
    with tempfile.TemporaryDirectory(prefix="ranks-") as scratch:
        rendezvous = os.path.join(scratch, "rendezvous")
        logs = [(Path(scratch) / f"rank{rank}.out", Path(scratch) / f"rank{rank}.err") for rank in range(world_size)]
        processes = []
        for rank, (out, err) in enumerate(logs):
            command = [sys.executable, script, "rank", str(rank), str(world_size), backend, rendezvous, *args]
            with open(out, "w") as stdout, open(err, "w") as stderr:
                processes.append(subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env))
        try:
            wait_for_all(processes, logs, timeout_s)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        return [json.loads(out.read_text().strip().splitlines()[-1]) for out, _ in logs]


# --8<-- [end:run-ranks]


def wait_for_all(processes: list, logs: list, timeout_s: float) -> None:
    """Return when every rank exited cleanly; raise RankFailed for the first that did not."""
    deadline = time.monotonic() + timeout_s
    while any(process.poll() is None for process in processes):
        failed = [rank for rank, process in enumerate(processes) if process.poll() not in (None, 0)]
        if failed:
            # A rank's failure makes its peers fail too (their connections close): name the one that
            # failed first, the one whose error output was written first.
            first = min(failed, key=lambda rank: logs[rank][1].stat().st_mtime_ns)
            raise RankFailed(failure(first, logs[first][1].read_text()))
        if time.monotonic() > deadline:
            late = ", ".join(str(rank) for rank, process in enumerate(processes) if process.poll() is None)
            raise RankFailed(f"ranks still running after {timeout_s:.0f} s: {late}; every rank was stopped")
        time.sleep(POLL_S)
    failed = [rank for rank, process in enumerate(processes) if process.returncode != 0]
    if failed:
        first = min(failed, key=lambda rank: logs[rank][1].stat().st_mtime_ns)
        raise RankFailed(failure(first, logs[first][1].read_text()))


def failure(rank: int, stderr: str) -> str:
    """One rank's failure in a sentence: the example file and line where it raised, and the error."""
    frames = EXAMPLE_FRAME.findall(stderr)
    where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "outside the examples"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    exceptions = [match.group(1) for line in lines if (match := EXCEPTION_LINE.match(line))]
    error = exceptions[-1] if exceptions else lines[-1] if lines else "(nothing on stderr)"
    return f"rank {rank} failed at {where}: {error}; every other rank was stopped"
