"""What each TORCH_LOGS artifact prints, on one small program with a graph break and a recompile.

Run it as it is: `python examples/debugging/torch_logs.py`. It stays on CPU tensors everywhere, so
Inductor generates C++ here, also on a GPU machine. Each artifact is captured on its own, with
`compile_tools.captured_logs(name=True)`, the in-process form of `TORCH_LOGS="name"`.
"""

import json
import logging
import re

import torch

import compile_tools

# Inductor's on-disk cache would let a second compile of the same graph skip fusion and codegen,
# and their logs with them: every capture below compiles from scratch.
torch._inductor.config.fx_graph_cache = False


# --8<-- [start:program]
def fn(x, w):
    y = torch.sin(x) * 2 + torch.cos(x)  # pointwise
    y = y / y.abs().sum(dim=-1, keepdim=True)  # a reduction, then pointwise again
    torch._dynamo.graph_break()  # a graph break, on purpose
    z = y @ w  # a matmul
    return torch.relu(z) + 1


x, w = torch.randn(8, 16), torch.randn(16, 4)


def capture(artifacts, recompile=False):
    """Compile fn from scratch with these artifacts on; with recompile, call it again in float64."""
    torch._dynamo.reset()
    with compile_tools.captured_logs(**artifacts) as log:
        compiled = torch.compile(fn)
        compiled(x, w)
        if recompile:
            compiled(x.double(), w.double())  # a new dtype fails a guard: a recompile
    return log.getvalue()


# --8<-- [end:program]

# --8<-- [start:dynamo]
text = capture({"dynamo": logging.INFO}, recompile=True)
compile_tools.print_lines(
    text,
    keep=lambda line: line.startswith(("Step", "Restarting")),
    why_cut="set-up and clean-up lines (create_env, produce_guards, gc)",
)
# --8<-- [end:dynamo]
steps = [line for line in text.splitlines() if line.startswith("Step 1: torchdynamo start tracing")]
assert sum("tracing fn " in line for line in steps) == 4, "fn traced twice per compile: the break restarts it"
assert text.count("Restarting analysis") == 2, "one restart per compile of fn"
assert sum("torch_dynamo_resume_in_fn" in line for line in steps) == 2, "the code after the break is a frame of its own"
assert text.count("Step 2: calling compiler function inductor") == 4, "one Inductor compile per graph"

# --8<-- [start:graph-breaks]
text = capture({"graph_breaks": True})
# The user code traceback starts with the frames that started this script (Python's runpy and, in the site's
# build, the example runner): printed from this file's first frame on.
lines = text.splitlines()
top = lines.index("User code traceback:") + 1
own = next(i for i in range(top, len(lines)) if 'torch_logs.py", line' in lines[i])
frames = lines[:top] + lines[own:]
compile_tools.print_lines(
    "\n".join(frames),
    keep=lambda line: not line.startswith((" For more details", "  Developer debug")),
    why_cut="the link to the graph-break site and Dynamo's developer context",
)
print(f"(and {own - top} lines above this script's first frame: the frames that started it)")
# --8<-- [end:graph-breaks]
assert text.count("Graph break in user code") == 1 and "torch._dynamo.graph_break()" in text
assert "User code traceback" in text, "the break comes with the user's stack"

# --8<-- [start:recompiles]
text = capture({"recompiles": True}, recompile=True)
print(text.rstrip())
# --8<-- [end:recompiles]
assert text.count("Recompiling function") == 2, "fn and its resume function both recompile"
assert text.count("dtype mismatch") == 2 and "expected Float, actual Double" in text

# --8<-- [start:guards]
text = capture({"guards": True})
compile_tools.print_lines(
    text,
    keep=lambda line: "TENSOR_MATCH" in line or line.startswith("GUARDS"),
    why_cut="the tree's other guards: global state, ids of `torch` and its functions, dynamic-shape markers",
)
global_state = json.loads(re.search(r"GLOBAL_STATE: ___check_global_state\(\) against (\{.*\})", text).group(1))
print(f"of those cut, GLOBAL_STATE (once per frame) compares: {', '.join(global_state)}")
# --8<-- [end:guards]
assert {"grad_mode", "num_threads", "default_dtype", "autocast_state"} <= set(global_state)
assert text.count("GUARDS:") == 2, "one guard set per compiled frame"
assert text.count("TENSOR_MATCH") >= 2 and "torch.float32" in text and "size=[8, 16]" in text

# --8<-- [start:aot-graphs]
text = capture({"aot_graphs": True})
first_graph = compile_tools.lines_between(text, "Forward graph", "aot_config").splitlines()
compile_tools.print_lines(
    text,
    keep=lambda line: line in first_graph and "class <lambda>" not in line,
    why_cut="metadata lines (aot_config, ViewAndMutationMeta, the module's file) and the second graph (mm, relu, add)",
)
# --8<-- [end:aot-graphs]
assert text.count("Forward graph") == 2, "one AOT graph per Dynamo graph; no backward, nothing requires grad"
# AOTAutograd numbers its graphs across the process (AOT_COUNTER), and torch._dynamo.reset() does not restart the
# count: the captures above compiled 4 + 2 + 4 + 2 graphs, numbered 0 to 11.
assert "Forward graph 12 " in text
assert "torch.ops.aten.sum.dim_IntList" in text and "torch.ops.aten.mm.default" in text

# --8<-- [start:output-code]
text = capture({"output_code": True})
interesting = re.compile(
    r"Output code written|= async_compile\.cpp|def call\(|extern_kernels\.mm\(|^\s+cpp_fused_\w+\("
)
compile_tools.print_lines(
    text,
    keep=lambda line: interesting.search(line) is not None,
    why_cut="imports, the C++ bodies of the kernels, buffer allocation and the benchmark harness",
)
# --8<-- [end:output-code]
kernels = re.findall(r"^(cpp_fused_\w+) = async_compile", text, re.M)
assert len(kernels) == 2, kernels  # one C++ kernel per graph
assert "extern_kernels.mm(" in text, "the matmul is a library call, not a generated kernel"
assert text.count("async_compile.cpp") == 2 and "triton" not in kernels[0]

# --8<-- [start:fusion]
text = capture({"fusion": True})
print("\n".join(line[:100] for line in text.splitlines() if line.strip()))  # each line cut at 100 characters
# --8<-- [end:fusion]
# After "fusion complete", one more fuse_nodes_once round: the one that may reorder loops to fuse (scheduler.py)
assert torch._inductor.config.loop_ordering_after_fusion and text.count("fuse_nodes_once, candidates:") == 4
assert re.search(r"^  OuterLoopFusedSchedulerNode", text, re.M), "the fused node, a candidate of that last round"
assert text.count("fusing op0 with op1") == 1, "only the reduction and the division fuse"
assert "OuterLoopFusedSchedulerNode" in text, "CPU's outer-loop fusion"
assert "ExternKernelSchedulerNode" in text and "fused 2 nodes into 2 nodes" in text, "mm does not fuse"

# --8<-- [start:schedule]
text = capture({"schedule": True})
print(f"schedule printed {len(text.splitlines())} lines")
# --8<-- [end:schedule]
assert text == "", "Inductor's C++ backend writes nothing to the schedule artifact"
