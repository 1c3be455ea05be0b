"""The anatomy of Inductor's output code: the kernels it generated and the wrapper that calls them.

Run it as it is: `python examples/triton-codegen/output_code.py` (on a GPU if torch sees one).
On a GPU the kernels are Triton; on a CPU they are C++ (the next page reads those).
"""

import io
import logging
import re
import tempfile
from collections import Counter
from pathlib import Path

import torch
from _program import block, kernel_kind, make_inputs

import compile_tools

torch.manual_seed(0)
device = compile_tools.device()
inputs = make_inputs(device)

# --8<-- [start:kernels]
compiled = torch.compile(block)
wrapper, *other_files = compile_tools.generated_code(compiled, *inputs)
kernels = compile_tools.kernel_names(wrapper)
for name in kernels:
    print(f"{kernel_kind(name):>21}: {name}")
print("extern kernels called:", sorted(set(re.findall(r"extern_kernels\.\w+", wrapper))))
# --8<-- [end:kernels]
kinds = Counter(kernel_kind(name) for name in kernels)
if device.type == "cuda":
    assert kinds == {"pointwise": 1, "persistent reduction": 1, "reduction": 1}, kernels
else:
    assert set(kinds) == {"C++ loop nest"}, kernels
assert re.search(r"extern_kernels\.(addmm|mm)\(", wrapper), "the matmul goes to a library kernel"
torch.testing.assert_close(compiled(*inputs), block(*inputs), rtol=1e-4, atol=1e-4)

by_kind = {kernel_kind(name): name for name in kernels}

# --8<-- [start:decorators]
for name in kernels:
    source = compile_tools.kernel_source(wrapper, name)
    print(f"--- {name}")
    compile_tools.print_lines(
        source,
        keep=lambda line: line.startswith("@triton") or "size_hints=" in line or "reduction_hint=" in line,
        why_cut="imports, triton_meta, inductor_meta and the kernel body",
    )
# --8<-- [end:decorators]
if device.type == "cuda":
    for kind, decorator in [
        ("pointwise", "@triton_heuristics.pointwise("),
        ("reduction", "@triton_heuristics.reduction("),
        ("persistent reduction", "@triton_heuristics.persistent_reduction("),
    ]:
        assert decorator in compile_tools.kernel_source(wrapper, by_kind[kind]), (kind, decorator)

def top_level_items(body: str) -> list[str]:
    """The items of a dict's body, split at the commas that lie outside brackets and quotes."""
    items, depth, quote, start = [], 0, None, 0
    for i, char in enumerate(body):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(body[start:i].strip())
            start = i + 1
    return [item for item in [*items, body[start:].strip()] if item]


# --8<-- [start:metadata]
printed = []
if device.type == "cuda":
    source = compile_tools.kernel_source(wrapper, by_kind["pointwise"])
    # triton_meta and inductor_meta are each one long line: print them one key per line.
    for line in source.splitlines():
        if line.strip().startswith(("triton_meta=", "inductor_meta=")):
            head, _, body = line.strip().rstrip(",").partition("={")
            print(head + "={")
            for item in top_level_items(body.removesuffix("}")):
                print("    " + item)
                printed.append(item)
            print("}")
# --8<-- [end:metadata]
if device.type == "cuda":
    assert "'signature':" in source and "'kernel_name':" in source, (
        "triton_meta has the signature, inductor_meta the name"
    )
    for item in printed:  # each key with its whole value: every bracket it opens, it closes
        assert all(item.count(left) == item.count(right) for left, right in ("()", "[]", "{}")), item

# --8<-- [start:pointwise-kernel]
if device.type == "cuda":
    source = compile_tools.kernel_source(wrapper, by_kind["pointwise"])
    print(compile_tools.lines_between(source, "@triton.jit"))
# --8<-- [end:pointwise-kernel]

# --8<-- [start:reduction-kernels]
if device.type == "cuda":
    for kind in ("persistent reduction", "reduction"):
        source = compile_tools.kernel_source(wrapper, by_kind[kind])
        print(f"# ---- {kind}")
        print(compile_tools.lines_between(source, "@triton.jit"))
        print()
# --8<-- [end:reduction-kernels]
if device.type == "cuda":
    loop = re.compile(r"^\s+for r\w* in ", re.M)
    red_loops = loop.findall(compile_tools.kernel_source(wrapper, by_kind["reduction"]))
    assert len(red_loops) >= 2, "the looped reduction walks its row once for the max, once for the sum"
    assert not loop.search(compile_tools.kernel_source(wrapper, by_kind["persistent reduction"])), "one block per row"

# --8<-- [start:autotuning]
heuristics_log = logging.getLogger("torch._inductor.runtime.triton_heuristics")
log_text = io.StringIO()
handler = logging.StreamHandler(log_text)
heuristics_log.addHandler(handler)
heuristics_log.setLevel(logging.DEBUG)
torch._dynamo.reset()
with torch._inductor.config.patch(force_disable_caches=True):  # no cached best config: benchmark again
    torch.compile(block)(*inputs)
heuristics_log.removeHandler(handler)
heuristics_log.setLevel(logging.NOTSET)
benchmarked = re.findall(r"Benchmark all input configs for (\w+)", log_text.getvalue())
compile_tools.print_lines(
    log_text.getvalue(),
    keep=lambda line: line.startswith("Benchmark all input configs") or ", nreg " in line,
    why_cut="other debug lines of the autotuner",
)
print("kernels benchmarked:", benchmarked)
# --8<-- [end:autotuning]
if device.type == "cuda":
    assert len(benchmarked) >= 1, "at least one kernel had several configs to choose from"
    assert len(re.findall(", nreg ", log_text.getvalue())) > len(benchmarked), "several configs per benchmarked kernel"

# --8<-- [start:autotuner-clock]
# profile_bandwidth=True makes each kernel time itself on its first run with the autotuner's own
# bench(), and writes the times to profile_bandwidth_output. One change between the two runs: the
# clock. By default bench() reads CUDA events around each call of the kernel; with
# profile_bandwidth_with_do_bench_using_profiling it reads the GPU time the profiler records.
bench_ms = {}  # (kernel, clock) -> ms
for clock, profiler_clock in (("CUDA events", False), ("profiler", True)):
    report = Path(tempfile.mkdtemp()) / "bandwidth.txt"
    torch._dynamo.reset()
    with torch._inductor.config.patch(
        force_disable_caches=True,
        profile_bandwidth=True,
        profile_bandwidth_output=str(report),
        benchmark_harness=False,  # with it, torch 2.11 fails to compile when an output file is set
        profile_bandwidth_with_do_bench_using_profiling=profiler_clock,
    ):
        torch.compile(block)(*inputs)
    for fields in map(str.split, report.read_text().splitlines() if report.exists() else []):
        if fields and fields[-1] in kernels:  # "0.092ms  0.268 GB  2905.12GB/s  28.02%  triton_poi_..."
            bench_ms[fields[-1], clock] = float(fields[0].removesuffix("ms"))
for name in kernels:
    if (name, "profiler") in bench_ms:
        events_us, profiler_us = (bench_ms[name, clock] * 1e3 for clock in ("CUDA events", "profiler"))
        print(f"{name[:45]:<45} CUDA events {events_us:6.1f} us   profiler {profiler_us:6.1f} us")
# --8<-- [end:autotuner-clock]
if device.type == "cuda":
    events_over_profiler = {name: bench_ms[name, "CUDA events"] / bench_ms[name, "profiler"] for name in kernels}
    assert events_over_profiler[by_kind["reduction"]] > 1.5, "the events time the host, not the 55 us kernel"
    assert abs(events_over_profiler[by_kind["pointwise"]] - 1) < 0.1, "a longer kernel hides the host's time"

# --8<-- [start:call]
print(compile_tools.lines_between(wrapper, "def call(", "return ("))
# --8<-- [end:call]
call = compile_tools.lines_between(wrapper, "def call(", "return (")
assert "# reuse" in call, "a dead buffer is reused for a new one"
assert re.search(r"\bdel (buf|arg)\w+", call), "buffers are freed as soon as they are dead"
if device.type == "cuda":
    assert "empty_strided_cuda(" in call and "stream=stream0" in call
    assert call.count(".run(") == 3, "three Triton launches"
