"""The host's part of a launch-bound time: a yardstick of this host, a real model's host time in its
units, the zoo's and reduce-overhead's ways of compiling one model side by side, and a slowed host.

Run it as it is: `python examples/benchmarking/host.py`. It needs a GPU and takes about a minute there.
"""
# execdocs: devices=cuda

import os
import statistics
import subprocess
import sys
import time

import _profile_diff
import _zoo
import host_yardstick
import torch

import compile_tools

device = compile_tools.device()
MODEL = "ResNet-50"  # 32 images of 224 x 224, bf16 autocast: the zoo's and reduce-overhead's input

# --8<-- [start:yardstick]
yardstick = host_yardstick.measure()
host_yardstick.print_measurement(yardstick)
# --8<-- [end:yardstick]


# --8<-- [start:two-compiles]
# The zoo compiles through the harness's backend (Inductor, keeping each FX graph); the reduce-overhead page's
# "default" column is plain torch.compile. Two copies of the model (same seed, same weights), one compiled each
# way, timed in interleaved pairs so that both see the same host from second to second.
def inference(module):
    return _profile_diff.inference_step(module, _zoo.input_maker(MODEL, module, device, train=False)())


eager_step = inference(_zoo.build(MODEL, device).eval())
as_the_zoo = inference(torch.compile(_zoo.build(MODEL, device).eval(), backend=_profile_diff.InductorKeepingGraphs()))
as_reduce_overhead = inference(torch.compile(_zoo.build(MODEL, device).eval()))
for _ in range(3):
    as_the_zoo(), as_reduce_overhead()
backends = _profile_diff.compare(as_the_zoo, as_reduce_overhead)  # its "eager" side is the zoo's compile
against_eager = _profile_diff.compare(eager_step, as_reduce_overhead)
zoo_ms, plain_ms = backends["eager"]["host_ms"], backends["compiled"]["host_ms"]
print(f"{MODEL} inference, batch of 32, host ms per call, in interleaved pairs")
print(f"  compiled as the zoo compiles it            {zoo_ms:6.2f}")
print(f"  compiled as reduce-overhead's default      {plain_ms:6.2f}   ({zoo_ms / plain_ms:.2f}x)")
eager_ms, launches = against_eager["eager"]["host_ms"], against_eager["eager"]["launches"]
per_launch_us = 1e3 * eager_ms / launches
small_op = yardstick["small_op_us"]["median"]
print(f"  eager, paired with the plain compile       {eager_ms:6.2f}   ({against_eager['eager']['bound']}, "
      f"{launches} launches: {per_launch_us:.1f} us each, {per_launch_us / small_op:.1f}x the small op)")  # fmt: skip
# --8<-- [end:two-compiles]
assert backends["eager"]["launches"] == backends["compiled"]["launches"], "the two compiles launch the same kernels"
assert 0.8 < zoo_ms / plain_ms < 1.25, f"the compile path does not set the host time: {zoo_ms / plain_ms:.2f}x"
assert against_eager["eager"]["bound"] == "launch-bound", "eager ResNet-50 at batch 32 waits on its host"
assert per_launch_us > small_op, "a real op costs the host more than the smallest one"


# --8<-- [start:slower-host]
def eager_host_ms(rounds: int = 5) -> float:
    """Median host ms of one eager call, over rounds of 10 calls, each from an idle GPU."""
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(10):
            eager_step()
        times.append((time.perf_counter() - start) * 1e3 / 10)
        torch.cuda.synchronize()
    return statistics.median(times)


BUSY_ON_CORE = "import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
core = min(os.sched_getaffinity(0))
everywhere = os.sched_getaffinity(0)
os.sched_setaffinity(0, {core})  # this thread, the one that launches, on one core, alone or shared
measured = {}
try:
    for shared in (False, True):
        # A busy process on the same core: the scheduler gives each about half of it, as a slower host would
        neighbour = subprocess.Popen([sys.executable, "-c", BUSY_ON_CORE.format(core=core)]) if shared else None
        try:
            time.sleep(0.5 if shared else 0)  # let it start spinning
            measured[shared] = (host_yardstick.small_op_us()["median"], eager_host_ms())
        finally:
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()
finally:
    os.sched_setaffinity(0, everywhere)
(op_alone, model_alone), (op_shared, model_shared) = measured[False], measured[True]
print(f"the launching thread on one core: {'alone':>10}{'shared with a busy process':>29}{'slower':>9}")
print(f"{'yardstick: a small op (us)':34}{op_alone:10.1f}{op_shared:29.1f}{op_shared / op_alone:8.2f}x")
model_label = f"{MODEL} eager, host ms per call"
print(f"{model_label:34}{model_alone:10.2f}{model_shared:29.2f}{model_shared / model_alone:8.2f}x")
# --8<-- [end:slower-host]
op_factor, model_factor = op_shared / op_alone, model_shared / model_alone
assert op_factor > 1.3 and model_factor > 1.3, "half a core: every launch takes longer"
assert 0.67 < model_factor / op_factor < 1.5, "the model's host time moves as the yardstick does"
