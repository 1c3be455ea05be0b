"""Compiling more than the model, on ResNet-50's training step: the optimizer step compiled, and the whole
step compiled with compiled autograd, each against compiling only the model; where each way's time goes.

Run it as it is: `python examples/benchmarking/whole_step_resnet.py`. It needs a GPU and takes about three
minutes there, most of it compiling.
"""
# execdocs: devices=cuda

import time

import compile_tools
from benchmarking import _whole_step

started = time.perf_counter()
device = compile_tools.device()

# --8<-- [start:report]
result = _whole_step.measure("ResNet-50", device)
_whole_step.print_report(result)
# --8<-- [end:report]
_whole_step.check(result)
whole_step = result["ways"]["whole step"]
# ResNet-50 leaves every parameter a gradient both ways: the whole step runs the optimizer graph compiled before
assert not whole_step["recompiled_because"], whole_step["recompiled_because"]
assert result["without_gradient"] == {"eager": [], "model compiled": []}, result["without_gradient"]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
