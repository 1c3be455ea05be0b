"""Compiling more than the model, on BERT-base's training step: the optimizer step compiled, and the whole
step compiled with compiled autograd, each against compiling only the model; where each way's time goes.

Run it as it is: `python examples/benchmarking/whole_step_bert.py`. It needs a GPU and takes about three
minutes there, most of it compiling.
"""
# execdocs: devices=cuda

import time

import compile_tools
from benchmarking import _whole_step

started = time.perf_counter()
device = compile_tools.device()

# --8<-- [start:report]
result = _whole_step.measure("BERT-base", device)
_whole_step.print_report(result)
# --8<-- [end:report]
_whole_step.check(result)
ways = result["ways"]
# The pooler's output is not in the loss: eager leaves its parameters no gradient, the compiled model zeros,
# and compiled autograd none again, so the whole step's optimizer graph is compiled for other gradients
pooler = ["pooler.dense.weight", "pooler.dense.bias"]
assert result["without_gradient"] == {"eager": pooler, "model compiled": []}, result["without_gradient"]
assert any("pooler.dense" in reason for reason in ways["whole step"]["recompiled_because"])
# Under compiled autograd the attention's backward matrix products run in fp32 (backward_autocast.py shows why)
fp32 = {way: ways[way]["categories"].get("GEMM/conv (fp32)", 0.0) for way in ("model compiled", "whole step")}
assert fp32["whole step"] > 2 * fp32["model compiled"], fp32

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
