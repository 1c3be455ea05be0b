"""Bytecode and PEP 523: the code object Dynamo installs in place of a function's own, its cache
entries and guards, and the resume function a graph break leaves behind.

Run it as it is: `python examples/dynamo/bytecode.py`. dis output depends on the Python version.
"""

import dis
import inspect
import re

import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

import compile_tools

torch.manual_seed(0)


def listing(code) -> str:
    """What `dis.dis(code)` prints, as a string."""
    return dis.Bytecode(code).dis().rstrip("\n")


def load_call_or_return(line: str) -> bool:
    """Whether a line of a dis listing loads a global, a local or a string, calls, or returns."""
    opname = re.search(r"\b[A-Z][A-Z_]+\b", line)
    return bool(opname) and (opname.group().startswith(("LOAD_GLOBAL", "LOAD_FAST", "CALL", "RETURN")) or "('" in line)


def counts(recorder) -> dict[str, int]:
    """What a GraphRecorder saw: the graphs it was given to compile, and the runs of what it returned."""
    return {"compiles": len(recorder.graphs), "graph runs": recorder.runs}


def dynamo_globals(code, prefix: str) -> list[str]:
    """Names that `code` loads and Dynamo made up: `__compiled_fn_...`, `__resume_at_...`."""
    return [name for name in code.co_names if name.startswith(prefix)]


# --8<-- [start:function]
def scale_and_shift(x, w):
    y = x * w
    return torch.relu(y) + 1.0


x = torch.randn(8)
w = torch.randn(8)
# --8<-- [end:function]

# --8<-- [start:original-bytecode]
print(listing(scale_and_shift.__code__))
# --8<-- [end:original-bytecode]

# --8<-- [start:compile]
recorder = compile_tools.GraphRecorder()  # keeps each graph it is given, counts the runs of what it returns
compiled = torch.compile(scale_and_shift, backend=recorder)
compiled(x, w)

entries = _debug_get_cache_entry_list(scale_and_shift.__code__)
entry = entries[0]
print(f"cache entries on scale_and_shift.__code__: {len(entries)}")
print(f"entry.compile_id: {entry.compile_id}   entry.code.co_name: {entry.code.co_name}")
print()
print(listing(entry.code))
# --8<-- [end:compile]
assert len(entries) == 1 and counts(recorder) == {"compiles": 1, "graph runs": 1}, "one compile, one cache entry"
assert entry.code is not scale_and_shift.__code__ and entry.code.co_name == "scale_and_shift"
(compiled_fn_name,) = dynamo_globals(entry.code, "__compiled_fn")  # the new code calls one compiled graph
assert not dynamo_globals(scale_and_shift.__code__, "__compiled_fn"), "the function's own code is unchanged"
new_instructions = list(dis.get_instructions(entry.code))
assert not [i for i in new_instructions if i.opname == "BINARY_OP" or i.argval == "relu"], (
    "the multiply, the relu and the add are all in the graph"
)
assert new_instructions[-1].opname.startswith("RETURN")

# --8<-- [start:compiled-fn]
compiled_fn = scale_and_shift.__globals__[compiled_fn_name]
print(f"{compiled_fn_name} is a global of the function's module")
print(f"  it wraps what the backend returned: {inspect.unwrap(compiled_fn).__qualname__}")
runs_before = recorder.runs
graph_outputs = compiled_fn(x, w)
print(
    f"  called with the tensors, it returns the graph's outputs: {type(graph_outputs).__name__} "
    f"of {len(graph_outputs)} tensor"
)
print(f"  and the recorder counts a graph run: {runs_before} -> {recorder.runs}")
# --8<-- [end:compiled-fn]
assert inspect.unwrap(compiled_fn).__qualname__.startswith("GraphRecorder.__call__"), "the backend's function"
assert recorder.runs == runs_before + 1, "calling the global runs what the backend returned"
assert len(graph_outputs) == 1 and torch.equal(graph_outputs[0], scale_and_shift(x, w))

# --8<-- [start:frame-hook]
print("so far:                ", counts(recorder))
compiled(x, w)  # through torch.compile: the frame hook is on, the cache entry matches
print("compiled(x, w):       ", counts(recorder))
scale_and_shift(x, w)  # the plain function: no hook, CPython runs the original bytecode
print("scale_and_shift(x, w):", counts(recorder))
# --8<-- [end:frame-hook]
assert counts(recorder) == {"compiles": 1, "graph runs": 3}, "compiled reused the entry; the plain call ran Python"

# --8<-- [start:guards]
# Each guard without the source comment that follows it.
guard_tree = "\n".join(line.split("  #")[0] for line in str(entry.guard_manager).splitlines())
compile_tools.print_lines(guard_tree, lambda line: "TENSOR_MATCH" in line, "the rest of the guard tree")
print()
for label, args in [("same x, w", (x, w)), ("x.double()", (x.double(), w)), ("x of 9 elements", (torch.randn(9), w))]:
    print(f"guards pass for {label:<16}: {entry.guard_manager.check({'x': args[0], 'w': args[1]})}")

compiled(x.double(), w.double())  # the guards fail: Dynamo compiles again and adds an entry
entries = _debug_get_cache_entry_list(scale_and_shift.__code__)
print(
    f"\nafter compiled(x.double(), w.double()): {len(entries)} cache entries, compile ids "
    f"{[str(e.compile_id) for e in entries]}"
)
compiled(x, w)  # float32 again: the older entry passes, and moves to the front
reordered = _debug_get_cache_entry_list(scale_and_shift.__code__)
print(f"after compiled(x, w) again:             compile ids {[str(e.compile_id) for e in reordered]}")
# --8<-- [end:guards]
assert [e.compile_id for e in reordered] == [e.compile_id for e in reversed(entries)], "used last, tried first"
assert guard_tree.count("TENSOR_MATCH") == 2, "one tensor guard for each argument"
assert entry.guard_manager.check({"x": x, "w": w})
assert not entry.guard_manager.check({"x": x.double(), "w": w})
assert not entry.guard_manager.check({"x": torch.randn(9), "w": w})
assert len(entries) == 2 and len(recorder.graphs) == 2, "a second entry, from one more compile"
assert entries[0].compile_id.frame_compile_id > entries[1].compile_id.frame_compile_id, "newest entry first"
assert len({e.code for e in entries}) == 2, "each entry has a code object of its own"


# --8<-- [start:graph-break]
# Leave out the profiler's two calls around the argument set-up from here on, to keep listings short.
torch._dynamo.config.record_runtime_overhead = False


def with_break(x):
    y = torch.sin(x)
    print("print() ran as plain Python")  # Dynamo can't put a print in a graph: graph break
    return torch.cos(y)


break_recorder = compile_tools.GraphRecorder()
compiled_break = torch.compile(with_break, backend=break_recorder)
compiled_break(x)
(entry,) = _debug_get_cache_entry_list(with_break.__code__)
print(counts(break_recorder))
print()
# Only loads of globals, locals and strings, calls and returns: the stack shuffling between them is cut.
compile_tools.print_lines(listing(entry.code), load_call_or_return, "the stack shuffling between these instructions")
# --8<-- [end:graph-break]
assert counts(break_recorder) == {"compiles": 2, "graph runs": 2}, "two graphs: sin before the break, cos after it"
assert len(dynamo_globals(entry.code, "__compiled_fn")) == 1
(resume_name,) = dynamo_globals(entry.code, "__resume_at")  # one resume function
steps = [
    i.offset
    for i in dis.get_instructions(entry.code)
    if str(i.argval).startswith(("__compiled_fn", "__resume_at")) or i.argval == "print"
]
assert len(steps) == 3 and steps == sorted(steps), "graph 1, then print, then the resume function"
assert list(dis.get_instructions(entry.code))[-1].opname.startswith("RETURN"), "its result is returned"

# --8<-- [start:resume-function]
resume_fn = with_break.__globals__[resume_name]
print(f"{resume_name}: function {resume_fn.__code__.co_name}{inspect.signature(resume_fn)}")
print()
print(listing(resume_fn.__code__))
# --8<-- [end:resume-function]
assert resume_fn.__code__.co_name.startswith("torch_dynamo_resume_in_with_break"), resume_fn.__code__.co_name
assert "y" in inspect.signature(resume_fn).parameters, "the live local y is passed in"
assert "cos" in resume_fn.__code__.co_names, "the rest of the function is in it"
instructions = list(dis.get_instructions(resume_fn.__code__))
jump = next(i for i in instructions if i.opname.startswith("JUMP"))
print_offset = next(i.offset for i in instructions if i.opname == "LOAD_GLOBAL" and i.argval == "print")
sin_offset = next(i.offset for i in instructions if i.opname == "LOAD_ATTR" and i.argval == "sin")
assert jump.offset < sin_offset < print_offset < jump.argval, "the prologue jumps over the copied start, past print"

# --8<-- [start:resume-cache-entry]
resume_entries = _debug_get_cache_entry_list(resume_fn.__code__)
print(f"cache entries on {resume_fn.__code__.co_name}: {len(resume_entries)}")
print()
print(listing(resume_entries[0].code))
# --8<-- [end:resume-cache-entry]
assert len(resume_entries) == 1
assert len(dynamo_globals(resume_entries[0].code, "__compiled_fn")) == 1, "the resume function calls the second graph"
assert not dynamo_globals(resume_entries[0].code, "__resume_at"), "no further break"

# --8<-- [start:bytecode-log]
torch._dynamo.reset()  # forget every compile, so that the next call compiles and logs again
with compile_tools.captured_logs(bytecode=True) as log:
    compiled_break(x)
header = ("ORIGINAL BYTECODE", "MODIFIED BYTECODE")  # how the log starts each listing
compile_tools.print_lines(log.getvalue(), lambda line: line.startswith(header), "the listings")
# --8<-- [end:bytecode-log]
headers = [line.strip() for line in log.getvalue().splitlines() if line.startswith(header)]
assert [header.split()[0] for header in headers] == ["ORIGINAL", "MODIFIED"] * 2, headers
assert headers[0].split()[2] == "with_break" and headers[2].split()[2].startswith("torch_dynamo_resume_in_with_break")
