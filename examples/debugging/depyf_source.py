"""depyf: the bytecode Dynamo produced for a function with a graph break, decompiled to Python.

Run it as it is: `python examples/debugging/depyf_source.py`. It needs depyf (`pip install depyf`).
`depyf.prepare_debug(folder)` hooks into Dynamo while the code inside it compiles, and writes
what it saw as Python files in that folder. CPU tensors everywhere, so Inductor generates C++,
also on a GPU machine. (The file is not named depyf.py, which would shadow the package.)
"""

import dis
import json
import inspect
import os
import re
import sys
import tempfile

import depyf
import torch

torch._inductor.config.fx_graph_cache = False  # compile for real, so that every file is written


# --8<-- [start:function]
def fn(x, y):
    a = torch.sin(x) * 2
    print("between the graphs")  # print is not a tensor operation: a graph break
    return a + y


x, y = torch.randn(8), torch.randn(8)
# --8<-- [end:function]

# --8<-- [start:prepare-debug]
dump = tempfile.mkdtemp()
compiled = torch.compile(fn)
with depyf.prepare_debug(dump):  # wrap the calls that compile, not the torch.compile line
    compiled(x, y)
# --8<-- [end:prepare-debug]


# --8<-- [start:helpers]
def tidy(text):
    """Names and numbers that change on every run: graph uuids, object ids, memory addresses."""
    text = re.sub(r"_[0-9a-f]{8}(_[0-9a-f]{4}){3}_[0-9a-f]{12}", "_<uuid>", text)
    text = re.sub(r"(___check_obj_id\(.+?), \d+\)", r"\1, <id>)", text)
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def read(name):
    with open(os.path.join(dump, name)) as file:
        return file.read()


def shorten(line, width=190):
    """A guard line without the source comment after it, and cut at `width` characters."""
    line = line.split("  #")[0].rstrip()
    return line if len(line) <= width else line[: width - 4] + " ..."


# --8<-- [end:helpers]


# --8<-- [start:files]
files = sorted(os.listdir(dump))
for name in files:
    print(f"{os.path.getsize(os.path.join(dump, name)):6} B  {tidy(name)}")
print(f"(written by depyf {depyf.__version__})")
# --8<-- [end:files]
# --8<-- [start:names]
transformed = [name for name in files if name.startswith("__transformed_code_")]
(fn_code,) = [name for name in transformed if name.endswith("_for_fn.py")]  # fn's transformed code
(resume_code,) = [name for name in transformed if "resume_in_fn" in name]  # the resume function's
(full_code,) = [name for name in files if name.startswith("full_code_for_fn")]  # everything about fn
# --8<-- [end:names]
graph_numbers = {re.match(r"__compiled_fn_(\d+)\.", name).group(1) for name in files if name[:14] == "__compiled_fn_"}
assert len(graph_numbers) == 2, "two graphs: before and after the print"
assert any(name.endswith(".kernel_0.py") for name in files), "and what Inductor generated for them"

# --8<-- [start:transformed-code]
print(tidy(read(fn_code)).strip())
# --8<-- [end:transformed-code]
assert "__compiled_fn_" in read(fn_code) and "__resume_at_" in read(fn_code), (
    "call the first graph, then the resume function"
)
assert "('between the graphs')" in read(fn_code), "the print runs in Python, between the two"

# --8<-- [start:resume]
resume_name = re.search(r"return (__resume_at_\w+)\(", read(fn_code)).group(1)
offset = int(re.match(r"__resume_at_(\d+)_", resume_name).group(1))
instructions = list(dis.get_instructions(fn))
at = next(i for i, instruction in enumerate(instructions) if instruction.offset == offset)
print(f"{resume_name}: resumes fn at bytecode offset {offset}, {instructions[at].opname}, just after", end=" ")
print(f"{instructions[at - 1].opname} on line {instructions[at - 1].positions.lineno}")
print()
print(tidy(read(resume_code)).strip())
print()
full = tidy(read(full_code))
print(full[full.index(f"def {resume_name}(") : full.index(f"def transformed_{resume_name}(")].strip())
print()
resume_guard = full[full.index("def __guard_0_for_torch_dynamo_resume_in_fn") :]
resume_guard = resume_guard[: resume_guard.index("return __guard_hit")]
print("its guards, in full_code_for_fn_0.py, include:")
print("\n".join(shorten(line) for line in resume_guard.splitlines() if "check_tensor(L['y']" in line))
# --8<-- [end:resume]
print_line = next(
    n for n, text in enumerate(inspect.getsource(fn).splitlines(), fn.__code__.co_firstlineno) if "print" in text
)
assert instructions[at - 1].opname.startswith("CALL") and instructions[at - 1].positions.lineno == print_line
assert "return a + y" in full[full.index(f"def {resume_name}(") :], "the resume function: the rest of fn"
assert "__compiled_fn_" in read(resume_code), "its transformed code calls the second graph"
resume_parameters = re.search(r"def __resume_at_\w+\((.*?)\)", full).group(1)
assert " a" in resume_parameters and " y" in resume_parameters and " x" not in resume_parameters, "live locals only"
assert "check_tensor(L['y']" in resume_guard, "y is guarded here"


# --8<-- [start:guards]
guard_start = full.index("def __guard_0_for_fn(")
guard = full[guard_start : full.index("return __guard_hit", guard_start)].splitlines()
kept = [shorten(line) for line in guard if line.strip() and "hasattr(" not in line]
print("\n".join(kept))
cut = sum("hasattr(" in line for line in guard)
print(f"    ... {cut} lines cut: hasattr(L['x'], '_dynamo_..._indices') == False (x has no dynamic-shape marks)")
state = json.loads(re.search(r"___check_global_state\(\) against (\{.*\})", "\n".join(guard)).group(1))
print(f"    (the global-state line, cut above, compares: {', '.join(state)})")
print()
wrapper = full[full.index("def transformed_fn(") : full.index("#============ end of fn")]
print(wrapper.strip())
# --8<-- [end:guards]
assert any("check_tensor(L['x']" in line for line in guard), "a guard on x: dtype, device, shape, strides"
assert any("___check_obj_id" in line and "['print']" in line for line in guard), "and on the print it called"
assert not any("L['y']" in line for line in guard), "no guard on y: the first graph does not use it"
assert "if __guard_0_for_fn(" in wrapper and "return fn(x, y)" in wrapper
assert {"grad_mode", "default_dtype", "num_threads", "autocast_state"} <= set(state)

# --8<-- [start:debugger]
ran = set()


def record_file(frame, event, arg):  # what a debugger sees: the file of every Python function that is called
    if event == "call":
        ran.add(os.path.basename(frame.f_code.co_filename))


sys.setprofile(record_file)
compiled(x, y)  # after prepare_debug: the cached, transformed code runs
sys.setprofile(None)
print("files of depyf's folder whose code ran:", sorted(tidy(name) for name in ran & set(files)))
# --8<-- [end:debugger]
assert {fn_code, resume_code} <= ran, "the transformed code that runs is compiled from depyf's files"
