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


def excerpt(text: str, opnames: tuple[str, ...]) -> str:
    """The lines of a dis listing whose instruction starts with one of `opnames`, or that load a string;
    each run of other lines becomes one '... N lines cut'."""
    kept, cut = [], 0
    for line in text.splitlines():
        opname = re.search(r"\b[A-Z][A-Z_]+\b", line)
        if opname and (opname.group().startswith(opnames) or "('" in line):
            if cut:
                kept.append(f"      ... {cut} line{'s' * (cut > 1)} cut")
            kept.append(line)
            cut = 0
        else:
            cut += 1
    if cut:
        kept.append(f"      ... {cut} line{'s' * (cut > 1)} cut")
    return "\n".join(kept)


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
stats = {"compiles": 0, "graph runs": 0}
backend_results = []


def counting_backend(graph_module, example_inputs):
    """A Dynamo backend that counts its compiles, and the runs of what it returns."""
    stats["compiles"] += 1

    def run_graph(*args):
        stats["graph runs"] += 1
        return graph_module.forward(*args)

    backend_results.append(run_graph)
    return run_graph


compiled = torch.compile(scale_and_shift, backend=counting_backend)
compiled(x, w)

entries = _debug_get_cache_entry_list(scale_and_shift.__code__)
entry = entries[0]
print(f"cache entries on scale_and_shift.__code__: {len(entries)}")
print(f"entry.compile_id: {entry.compile_id}   entry.code.co_name: {entry.code.co_name}")
print()
print(listing(entry.code))
# --8<-- [end:compile]
assert len(entries) == 1, "one compile, one cache entry"
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
print(f"  it wraps what the backend returned: {inspect.unwrap(compiled_fn) is backend_results[0]}")
graph_outputs = compiled_fn(x, w)
print(
    f"  called with the tensors, it returns the graph's outputs: {type(graph_outputs).__name__} "
    f"of {len(graph_outputs)} tensor"
)
# --8<-- [end:compiled-fn]
assert inspect.unwrap(compiled_fn) is backend_results[0]
assert len(graph_outputs) == 1 and torch.equal(graph_outputs[0], scale_and_shift(x, w))

# --8<-- [start:frame-hook]
stats.update({"compiles": 0, "graph runs": 0})
compiled(x, w)  # through torch.compile: the frame hook is on, the cache entry matches
print("compiled(x, w):       ", stats)
scale_and_shift(x, w)  # the plain function: no hook, CPython runs the original bytecode
print("scale_and_shift(x, w):", stats)
# --8<-- [end:frame-hook]
assert stats == {"compiles": 0, "graph runs": 1}, "the second call reused the cache entry; the plain call ran Python"

# --8<-- [start:guards]
guard_lines = [line for line in str(entry.guard_manager).splitlines() if "TENSOR_MATCH" in line]
for line in guard_lines:
    print(line.split("  #")[0].strip())  # the guard, without the source comment that follows it
print(f"... {len(str(entry.guard_manager).splitlines()) - len(guard_lines)} other lines of the guard tree cut")
print()
for label, args in [("same x, w", (x, w)), ("x.double()", (x.double(), w)), ("x of 9 elements", (torch.randn(9), w))]:
    print(f"guards pass for {label:<16}: {entry.guard_manager.check({'x': args[0], 'w': args[1]})}")

compiled(x.double(), w.double())  # the guards fail: Dynamo compiles again and adds an entry
entries = _debug_get_cache_entry_list(scale_and_shift.__code__)
print(
    f"\nafter compiled(x.double(), w.double()): {len(entries)} cache entries, compile ids "
    f"{[str(e.compile_id) for e in entries]}"
)
# --8<-- [end:guards]
assert len(guard_lines) == 2, "one tensor guard for each argument"
assert entry.guard_manager.check({"x": x, "w": w})
assert not entry.guard_manager.check({"x": x.double(), "w": w})
assert not entry.guard_manager.check({"x": torch.randn(9), "w": w})
assert len(entries) == 2 and stats["compiles"] == 1, "a second entry, from one more compile"
assert entries[0].compile_id.frame_compile_id > entries[1].compile_id.frame_compile_id, "newest entry first"
assert len({e.code for e in entries}) == 2, "each entry has a code object of its own"


# --8<-- [start:graph-break]
# Leave out the profiler's two calls around the argument set-up from here on, to keep listings short.
torch._dynamo.config.record_runtime_overhead = False


def with_break(x):
    y = torch.sin(x)
    print("print() ran as plain Python")  # Dynamo can't put a print in a graph: graph break
    return torch.cos(y)


stats.update({"compiles": 0, "graph runs": 0})
compiled_break = torch.compile(with_break, backend=counting_backend)
compiled_break(x)
(entry,) = _debug_get_cache_entry_list(with_break.__code__)
print(stats)
print()
# The stack shuffling between the calls is cut: only loads of globals, locals and strings, calls and returns.
print(excerpt(listing(entry.code), ("LOAD_GLOBAL", "LOAD_FAST", "CALL", "RETURN")))
# --8<-- [end:graph-break]
assert stats == {"compiles": 2, "graph runs": 2}, "two graphs: sin before the break, cos after it"
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
log_lines = log.getvalue().splitlines()
headers = [line.strip() for line in log_lines if line.startswith(("ORIGINAL BYTECODE", "MODIFIED BYTECODE"))]
print("\n".join(headers))
print(f"... {len(log_lines) - len(headers)} lines of listings cut")
# --8<-- [end:bytecode-log]
assert [header.split()[0] for header in headers] == ["ORIGINAL", "MODIFIED"] * 2, headers
assert headers[0].split()[2] == "with_break" and headers[2].split()[2].startswith("torch_dynamo_resume_in_with_break")
