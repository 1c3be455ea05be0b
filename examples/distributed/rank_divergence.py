"""When ranks compile differently: one rank recompiles, and the others wait for it in DDP's all-reduce.

Run it as it is: `python examples/distributed/rank_divergence.py`. Two ranks, each a Python process of its own on
this machine's CPU (this same file, started with the argument `rank`), train over gloo.
"""

# execdocs: devices=cpu

import contextlib
import datetime
import re
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch._inductor.utils import fresh_cache
from torch.nn.parallel import DistributedDataParallel as DDP

import compile_tools
from distributed import _ranks
from distributed._mlp import MLP, WIDTH

started = time.perf_counter()
WORLD_SIZE, STEPS = 2, 5
LAST = STEPS - 1  # the step at which rank 1's batch differs from rank 0's
SHORT_TIMEOUT = datetime.timedelta(seconds=1.5)


# --8<-- [start:batches]
def batch_size(rank: int, step: int) -> int:
    """32 rows on every rank at every step, except on rank 1 at the last step: 48."""
    return 48 if rank == 1 and step == LAST else 32


# --8<-- [end:batches]


# --8<-- [start:rank]
def work(rank: int, world_size: int, scenario: str) -> dict:
    """On each rank: STEPS training steps of DDP(torch.compile(model)); per step, its time and the gradients."""
    torch.manual_seed(0)  # the same weights on every rank, as DDP requires
    group = None  # DDP's all-reduces go over the default group, whose gloo timeout is 30 minutes
    if scenario == "short timeout":
        group = dist.new_group(backend="gloo")  # the default timeout while both ranks compile, at the first step
    ddp = DDP(torch.compile(MLP()), process_group=group)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(rank)  # each rank its own data
    steps, error = [], None
    with compile_tools.captured_logs(recompiles=True) as log:
        for step in range(STEPS):
            x = torch.randn(batch_size(rank, step), WIDTH, generator=data)
            if scenario == "dynamic batch":
                torch._dynamo.mark_dynamic(x, 0)  # the batch dimension is dynamic from the first compile on
            if scenario == "short timeout" and step == LAST:  # torch has no public way to change it once made
                dist.distributed_c10d._set_pg_timeout(SHORT_TIMEOUT, group)
            dist.barrier()  # every rank starts the step at the same time, so each step's time is its own
            # the last step in an empty Inductor cache folder: a compile there compiles, rather than loading
            # what an earlier run of this example left in the cache
            with fresh_cache() if step == LAST else contextlib.nullcontext():
                start = time.perf_counter()
                try:
                    loss = ddp(x).sum()
                    forward_done = time.perf_counter()
                    loss.backward()  # DDP all-reduces the gradients during the backward pass
                except RuntimeError as raised:  # gloo's errors are RuntimeErrors
                    error = {"type": type(raised).__name__, "line": str(raised).strip().splitlines()[0],
                             "step": step, "after": time.perf_counter() - start}  # fmt: skip
                    break
                end = time.perf_counter()
            gradients = [parameter.grad for parameter in ddp.parameters()]
            steps.append({
                "batch": len(x),
                "forward": forward_done - start,
                "backward": end - forward_done,  # the all-reduce's wait included
                "checksum": sum(gradient.double().sum().item() for gradient in gradients),
                "graphs": torch._dynamo.utils.counters["stats"]["unique_graphs"],  # Dynamo's, so far
            })  # fmt: skip
            optimizer.step()
            optimizer.zero_grad()
    # Dynamo's reasons, as "- 0/0: tensor 'x' size mismatch ...": without the dash and the cache entry's number
    recompiles = [line.split(": ", 1)[1] for line in log.getvalue().splitlines() if "mismatch" in line]
    return {"steps": steps, "recompiles": recompiles, "error": error,
            "device_types": [device.type for device in dist.group.WORLD._device_types]}  # fmt: skip


# --8<-- [end:rank]


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)


def seconds(step: dict) -> float:
    return step["forward"] + step["backward"]


def steady(rank: dict) -> float:
    """A rank's usual step: the median of the steps between the first (which compiles) and the last."""
    return statistics.median(seconds(step) for step in rank["steps"][1:LAST])


def gist(line: str) -> str:
    """gloo's message without its source file and line, the peer's address and port, or what follows it."""
    line = re.sub(r"^\[\S+\] ", "", line)
    return re.sub(r" \[[0-9a-f.:]+\]:\d+", "", line).split(". ")[0]


def report(ranks: list) -> None:
    """One line per rank: Dynamo's graphs and recompiles, its usual step, and its last step."""
    print(f"{'rank':>4}{'last batch':>11}{'graphs':>7}{'recompiles':>11}{'usual step':>11}"
          f"{'last step':>10}  (forward + backward)")  # fmt: skip
    for number, rank in enumerate(ranks):
        last = rank["steps"][LAST]
        counts = f"{number:4d}{last['batch']:11d}{last['graphs']:7d}{len(rank['recompiles']):11d}"
        times = f"{steady(rank):9.2f} s{seconds(last):8.2f} s  ({last['forward']:.2f} s + {last['backward']:.2f} s)"
        print(counts + times)
    for number, rank in enumerate(ranks):
        for reason in rank["recompiles"]:
            print(f"rank {number} recompiled: {reason}")
    same = all(a["checksum"] == b["checksum"] for a, b in zip(ranks[0]["steps"], ranks[1]["steps"], strict=True))
    print(f"the same gradients on both ranks after every step: {same}")


# --8<-- [start:one-rank-recompiles]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE, "default")
print(f"{WORLD_SIZE} ranks over gloo, {STEPS} steps of DDP(torch.compile(model)); at the last step rank 1's batch")
print("differs. Per rank:")
report(ranks)
# --8<-- [end:one-rank-recompiles]
assert [len(rank["recompiles"]) for rank in ranks] == [0, 1], "rank 1 recompiles, rank 0 does not"
assert [rank["steps"][LAST]["graphs"] for rank in ranks] == [1, 2], "Dynamo graphs: 1 on rank 0, 2 on rank 1"
assert "size mismatch at index 0. expected 32, actual 48" in ranks[1]["recompiles"][0], "because of the batch"
assert all(rank["error"] is None for rank in ranks)
for a, b in zip(ranks[0]["steps"], ranks[1]["steps"], strict=True):
    assert a["checksum"] == b["checksum"], "DDP keeps the gradients equal on both ranks, recompile or not"
rank0_last, rank1_last = ranks[0]["steps"][LAST], ranks[1]["steps"][LAST]
assert seconds(rank0_last) > 10 * steady(ranks[0]), "rank 0's last step is much longer than its usual step"
assert rank0_last["backward"] > 10 * rank0_last["forward"], "rank 0 waits in the backward pass: the all-reduce"
assert rank1_last["forward"] > 10 * rank1_last["backward"], "rank 1 spends its last step in the forward: compiling"
assert 0.5 < seconds(rank0_last) / rank1_last["forward"] < 2, "rank 0's wait is about rank 1's compile"

# --8<-- [start:short-timeout]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE, "short timeout")
timeout_s, default_minutes = SHORT_TIMEOUT.total_seconds(), dist.default_pg_timeout.total_seconds() / 60
print(f"The same, with DDP on a gloo group whose timeout is set to {timeout_s} s for the last step "
      f"({default_minutes:.0f} minutes by default):")  # fmt: skip
for number, rank in enumerate(ranks):
    error = rank["error"]
    print(f"rank {number}: {len(rank['steps'])} steps done; then at step {error['step']}, "
          f"after {error['after']:.2f} s, {error['type']}:")  # fmt: skip
    print(f"  {gist(error['line'])}")
# --8<-- [end:short-timeout]
for rank in ranks:
    assert len(rank["steps"]) == LAST and rank["error"]["step"] == LAST, "every rank fails at the last step"
rank0_error = ranks[0]["error"]
assert "timed out" in rank0_error["line"].lower(), f"rank 0 gets a timeout: {rank0_error['line']}"
assert timeout_s <= rank0_error["after"] < 2 * timeout_s, "rank 0 gives up after the timeout"
assert rank0_error["after"] < 0.8 * seconds(rank0_last), "sooner than the wait for the compile, above"
assert ranks[1]["error"]["after"] > rank0_error["after"], "rank 1 fails later: when it reaches the all-reduce"

# --8<-- [start:dynamic-batch]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE, "dynamic batch")
print("The same, with torch._dynamo.mark_dynamic(x, 0) on every batch:")
report(ranks)
# --8<-- [end:dynamic-batch]
assert [len(rank["recompiles"]) for rank in ranks] == [0, 0], "no rank recompiles"
assert [rank["steps"][LAST]["graphs"] for rank in ranks] == [1, 1], "one Dynamo graph per rank"
for a, b in zip(ranks[0]["steps"], ranks[1]["steps"], strict=True):
    assert a["checksum"] == b["checksum"], "the same gradients on both ranks"
for rank in ranks:
    assert seconds(rank["steps"][LAST]) < seconds(rank0_last) / 10, "no last step waits for a compile"

# --8<-- [start:device-types]
print(f"the device types the default gloo group serves: {', '.join(ranks[0]['device_types'])}")
# --8<-- [end:device-types]
assert len(ranks[0]["device_types"]) > 1

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
