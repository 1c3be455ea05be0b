"""Hierarchical compilation: the repeated block marked as a nested compile region, inside one compiled model.

Run it as it is: `python examples/deploying/hierarchical.py` (on a GPU if torch sees one). Every compile
runs in a fresh Python process with an empty Inductor cache (this same file, started with the argument
`job`), as on the regional compilation page, so that no compile is helped by another's cache.
"""

import inspect
import json
import operator
import os
import subprocess
import sys
import tempfile
import time

import torch

started = time.perf_counter()
DEPTHS, WIDTH, BATCH = (8, 32), 64, 32
MODES = ("full", "regional", "nested")
ROUNDS = 3  # eager and compiled timed in turn, so that a slow moment of the machine falls on both
JOB_TIMEOUT_S = 300  # a compile takes seconds; a hung one must not hang the build


# --8<-- [start:region]
@torch.compiler.nested_compile_region
def block(layer, x):
    """One layer's call, marked: compiled where it is first met, reused wherever its inputs match."""
    return layer(x)


def nested_forward(model, x):
    """The model's own forward (deploying/_model.py), with each layer's call going through `block`."""
    x = model.embed(x)
    for layer in model.layers:
        x = block(layer, x)
    return model.head(x)


# --8<-- [end:region]


def operations(graph_module) -> int:
    """The calls in one FX graph, not counting the `getitem`s that unpack a subgraph's outputs."""
    return sum(node.op.startswith("call") and node.target is not operator.getitem for node in graph_module.graph.nodes)


# --8<-- [start:job]
def job(mode: str, depth: int, timed: bool) -> None:
    """Compile the model of `depth` blocks in this fresh process as `mode`; prints one JSON line."""
    import copy
    import functools
    import statistics

    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._inductor.utils import run_and_get_code

    import compile_tools
    from deploying import _model

    device = compile_tools.device()
    if device.type == "cpu":  # the CPU's vector-instruction tests (regional page), paid once, before the clock
        from torch._inductor import cpu_vec_isa

        cpu_vec_isa.pick_vec_isa()
    model = _model.build(device, width=WIDTH, depth=depth)
    x = torch.randn(BATCH, WIDTH, device=device)
    eager = copy.deepcopy(model)  # stays uncompiled: regional compilation changes `model` in place
    torch.testing.assert_close(nested_forward(model, x), model(x))  # outside torch.compile, the mark does nothing
    backend = CompileCounterWithBackend("inductor")  # Inductor, keeping each graph Dynamo hands it

    t0 = time.perf_counter()
    if mode == "full":
        run = torch.compile(model, backend=backend)
    elif mode == "regional":
        for layer in model.layers:
            layer.compile(backend=backend)
        run = model
    else:
        run = functools.partial(torch.compile(nested_forward, backend=backend), model)
    output, sources = run_and_get_code(run, x)  # the first call compiles; Inductor's code is kept
    if device.type == "cuda":
        torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    torch.testing.assert_close(output, expected := eager(x))

    invoke_subgraph = torch.ops.higher_order.invoke_subgraph
    nodes = [node for graph in backend.graphs for node in graph.graph.nodes]
    traced_graphs = [module for graph in backend.graphs for module in graph.modules()]  # subgraphs included, once
    headers, values = torch._dynamo.utils.compile_times(repr="csv", aggregate=True)
    stage_s = dict(zip(headers, values, strict=True))
    backend_s = float(stage_s["OutputGraph.call_user_compiler"])  # AOTAutograd and Inductor
    with torch.profiler.profile() as profile:  # Dynamo names each entry into compiled code in the profile
        run(x)
    result = {
        "device": device.type,
        "compile_s": compile_s,
        "dynamo_s": float(stage_s["_compile.compile_inner"]) - backend_s,
        "backend_s": backend_s,
        "dynamo_graphs": len(backend.graphs),
        "invoke_subgraph_calls": sum(node.target is invoke_subgraph for node in nodes),
        "subgraphs": len({node.args[0].target for node in nodes if node.target is invoke_subgraph}),
        "ops_traced": sum(operations(module) for module in traced_graphs if isinstance(module, torch.fx.GraphModule)),
        "inductor_compiles": torch._dynamo.utils.counters["inductor"]["fxgraph_cache_miss"],
        "kernels_defined": sum(len(compile_tools.kernel_names(source)) for source in sources),
        "regions_per_call": sum(event.name.startswith("Torch-Compiled Region") for event in profile.events()),
        "kernels_per_call": compile_tools.gpu_kernel_launches(run, x) if device.type == "cuda" else None,
    }
    torch.testing.assert_close(run(x), expected)
    if timed:
        rounds = [(compile_tools.timing_ms(eager, x)["median"], compile_tools.timing_ms(run, x)["median"])
                  for _ in range(ROUNDS)]  # fmt: skip
        speedups = [eager_ms / compiled_ms for eager_ms, compiled_ms in rounds]  # above 1: compiled is faster
        result["call_ms"] = statistics.median(compiled_ms for _, compiled_ms in rounds)
        result["eager_ms"] = statistics.median(eager_ms for eager_ms, _ in rounds)
        result["speedup"] = statistics.median(speedups)
        result["speedup_range"] = f"{min(speedups):.2f}-{max(speedups):.2f}"
    print(json.dumps(result))


# --8<-- [end:job]

if len(sys.argv) > 1 and sys.argv[1] == "job":
    with torch.no_grad():  # inference: the regional page shows what autograd adds per region
        job(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "timed")
    sys.exit(0)


# --8<-- [start:run-jobs]
def run_job(mode: str, depth: int, timed: bool) -> dict:
    """job(mode, depth) in a new Python process with its own, empty Inductor cache."""
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
        env.pop("TRITON_CACHE_DIR", None)  # Triton's kernel cache then lives in cache_dir too
        arguments = [sys.executable, __file__, "job", mode, str(depth), "timed" if timed else "untimed"]
        done = subprocess.run(arguments, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} job at depth {depth} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


runs = {(mode, depth): run_job(mode, depth, timed=depth == max(DEPTHS)) for depth in DEPTHS for mode in MODES}

print(f"blocks of width {WIDTH}, batch {BATCH}, under torch.no_grad(); each column a fresh process")
print(f"{'':38}" + "".join(f"{f'{mode} x{depth}':>13}" for mode, depth in runs))
rows = [
    ("Dynamo graphs", "dynamo_graphs", "d"),
    ("invoke_subgraph calls in them", "invoke_subgraph_calls", "d"),
    ("  distinct subgraphs called", "subgraphs", "d"),
    ("  operations in it, a subgraph once", "ops_traced", "d"),
    ("Inductor compiles", "inductor_compiles", "d"),
    ("kernels in the generated code", "kernels_defined", "d"),
    ("compile + first call (s)", "compile_s", ".2f"),
    ("  of it, Dynamo's tracing (s)", "dynamo_s", ".2f"),
    ("  of it, AOTAutograd + Inductor (s)", "backend_s", ".2f"),
    ("compiled regions per call", "regions_per_call", "d"),
    ("GPU kernels per call", "kernels_per_call", "d"),
    ("ms per call (median of rounds)", "call_ms", ".3f"),
    ("  eager, same rounds", "eager_ms", ".3f"),
    (f"  speedup, eager / compiled, {ROUNDS} rounds", "speedup", ".2f"),
    ("  range of the rounds", "speedup_range", ""),
]
for label, key, fmt in rows:
    cells = ["-" if run.get(key) is None else f"{run[key]:{fmt}}" for run in runs.values()]
    print(f"{label:38}" + "".join(f"{cell:>13}" for cell in cells))
# --8<-- [end:run-jobs]
deep = max(DEPTHS)
for depth in DEPTHS:
    full, regional, nested = (runs[mode, depth] for mode in MODES)
    assert full["dynamo_graphs"] == regional["dynamo_graphs"] == nested["dynamo_graphs"] == 1, "one graph each"
    assert full["invoke_subgraph_calls"] == regional["invoke_subgraph_calls"] == 0, "no region marked"
    assert nested["invoke_subgraph_calls"] == depth and nested["subgraphs"] == 1, "every layer calls one subgraph"
    assert full["inductor_compiles"] == regional["inductor_compiles"] == nested["inductor_compiles"] == 1
    assert full["regions_per_call"] == nested["regions_per_call"] == 1, "one compiled region: the whole model"
    assert regional["regions_per_call"] == depth, "regional: one region per layer"
    if full["device"] == "cuda":
        assert nested["kernels_per_call"] >= full["kernels_per_call"], "no fusion across a region's boundary"
shallow = min(DEPTHS)
for mode in MODES:  # Inductor writes a kernel once however often the graph repeats it, even in the full graph
    assert runs[mode, deep]["kernels_defined"] == runs[mode, shallow]["kernels_defined"], mode
assert runs["full", deep]["ops_traced"] > 3 * runs["nested", deep]["ops_traced"], "full traces every layer's ops"
assert runs["nested", deep]["compile_s"] < runs["full", deep]["compile_s"], "the deep model compiles faster nested"
assert runs["nested", deep]["backend_s"] < runs["full", deep]["backend_s"], "Inductor lowers the block once"

# --8<-- [start:reuse]
from torch._dynamo.testing import CompileCounterWithBackend  # noqa: E402

import compile_tools  # noqa: E402
from deploying import _model  # noqa: E402


def two_batch_sizes(model, x):
    """The region three times: twice on the whole batch, then on half of it (same code, another input shape)."""
    y = block(model.layers[0], x)
    y = block(model.layers[1], y)
    return block(model.layers[0], y[: BATCH // 2])


device = compile_tools.device()
model = _model.build(device, width=WIDTH, depth=2)
x = torch.randn(BATCH, WIDTH, device=device)
graphs = CompileCounterWithBackend("eager")  # Dynamo's graph is enough here: nothing is compiled further
with torch.no_grad(), compile_tools.captured_logs(hierarchical_compile=True) as log:
    torch.compile(two_batch_sizes, backend=graphs)(model, x)
compile_tools.print_lines(log.getvalue(), lambda line: "Number of guards" not in line, "the guards' counts")
graph = graphs.graphs[0].graph
called = [node.args[0].target for node in graph.nodes if node.target is torch.ops.higher_order.invoke_subgraph]
print("subgraph called by each invoke_subgraph in Dynamo's graph:", called)
print("layer_norm calls left in the graph itself:", sum("layer_norm" in str(node.target) for node in graph.nodes))
# --8<-- [end:reuse]
assert len(called) >= 2 and called[0] == called[1], "the two whole-batch calls share one subgraph"
assert len(called) == 2 or called[2] != called[0], "the half-batch call does not reuse it"

# --8<-- [start:options]
print("nested_compile_region" + str(inspect.signature(torch.compiler.nested_compile_region)))
from torch._higher_order_ops.invoke_subgraph import NestedCompileRegionOptions  # noqa: E402

print("NestedCompileRegionOptions fields:", list(inspect.signature(NestedCompileRegionOptions).parameters))
try:
    torch.compiler.nested_compile_region(block, options=NestedCompileRegionOptions(partitioner="default_partition"))
    print("options accepted")
except RuntimeError as error:
    print(f"RuntimeError: {error}")
# --8<-- [end:options]
assert not torch._dynamo.config.enable_invoke_subgraph_regional_compile, "options are gated by this testing flag"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
