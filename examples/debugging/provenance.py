"""From a compiled kernel back to the file and line of the model that produced it, on a transformers Llama.

Run it as it is: `python examples/debugging/provenance.py` (it needs transformers; the model is built from
a config with random weights, so nothing is downloaded). Everything it reads is in the folder that
TORCH_COMPILE_DEBUG=1 writes, which is also what a reader has after a run of their own.
"""

# execdocs: devices=cpu

# --8<-- [start:turn-on]
import os
import tempfile

os.environ["TORCH_COMPILE_DEBUG"] = "1"  # before `import torch`: Inductor's debug folder, and provenance tracking
os.environ["TORCH_COMPILE_DEBUG_DIR"] = tempfile.mkdtemp()
# --8<-- [end:turn-on]

import json
import re
from pathlib import Path

import torch
import transformers

from debugging._debug_folder import source_lines
from debugging._llama import in_package, small_llama, tokens

# --8<-- [start:turned-on]
print(f"provenance_tracking_level: {torch._inductor.config.trace.provenance_tracking_level}")
print(f"transformers {transformers.__version__}: the line numbers below are those of its files")
# --8<-- [end:turned-on]
assert torch._inductor.config.trace.provenance_tracking_level >= 1, "TORCH_COMPILE_DEBUG=1 turned it on"
# A cached compile writes no debug files: compile from scratch.
torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False

# --8<-- [start:patterns]
HANDLE = re.compile(r"# \[Provenance debug handles\] (\S+)")
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
# --8<-- [end:patterns]

# --8<-- [start:compile]
model = small_llama()
with torch.no_grad():
    torch.compile(model)(input_ids=tokens(16))
folder = next(Path(os.environ["TORCH_COMPILE_DEBUG_DIR"]).rglob("output_code.py")).parent
# --8<-- [end:compile]

# --8<-- [start:handles]
code = (folder / "output_code.py").read_text().splitlines()
handles = [match.group(1) for line in code if (match := HANDLE.search(line))]
library = sum(handle.startswith("extern_kernels.") for handle in handles)
print(f"output_code.py: {len(handles)} kernel calls ({library} of them library calls, extern_kernels.*), "
      "each after a '[Provenance debug handles]' comment; the first:")  # fmt: skip
first = next(index for index, line in enumerate(code) if HANDLE.search(line))
print("\n".join(line.strip() for line in code[first : first + 2]))
# --8<-- [end:handles]
assert len(set(handles)) == len(handles), "a handle names one call of one kernel"

# --8<-- [start:mapping]
mapping = json.loads((folder / "inductor_provenance_tracking_node_mappings.json").read_text())
kernel = handles[0]
print(f"inductor_provenance_tracking_node_mappings.json: {sorted(mapping)}")
print(f"cppCodeToPost[{kernel!r}]: {mapping['cppCodeToPost'][kernel]}")
print(f"postToPre, for each: { {node: mapping['postToPre'].get(node) for node in mapping['cppCodeToPost'][kernel]} }")
readers = mapping["postToCppCode"]["embedding"]  # the kernel calls that compute the embedding node
print(f"postToCppCode['embedding']: {readers}")
# --8<-- [end:mapping]
assert set(mapping["cppCodeToPost"]) == set(handles), "every kernel call, by its handle"
assert library > 0, "the library calls have handles too"


# --8<-- [start:lines]
post_grad = source_lines(folder / "fx_graph_transformed.py")  # the graph after Inductor's own passes
kernel_lines = [post_grad[node] for node in mapping["cppCodeToPost"][kernel] if node in post_grad]
print(f"{kernel}: the lines of the model it computes")
for place, source in dict.fromkeys(kernel_lines):
    print(f"  {place}: {source}")
# --8<-- [end:lines]
assert any("embed_tokens" in source for _, source in kernel_lines)
assert len(readers) > 1 and all(len(mapping["cppCodeToPost"][call]) > 1 for call in readers), (
    "the embedding lookup has no kernel of its own: it is computed again inside each kernel that reads it"
)
assert any("variance" in source for _, source in kernel_lines)


# --8<-- [start:trace-log]
def trace_artifact(log: Path, name: str) -> dict | None:
    """One artifact of a TORCH_TRACE log (what tlparse reads): the JSON payload, the tab-indented lines after
    the metadata line that names it; None if the log has no such artifact."""
    lines = log.read_text().splitlines()
    named = [index for index, line in enumerate(lines) if f'"name": "{name}"' in line]
    if not named:
        return None
    start = named[0] + 1
    end = next((index for index in range(start, len(lines)) if not lines[index].startswith("\t")), len(lines))
    return json.loads("\n".join(line[1:] for line in lines[start:end]))


logs = list(Path(os.environ["TORCH_COMPILE_DEBUG_DIR"]).rglob("dedicated_log_torch_trace_*.log"))
stack_traces = trace_artifact(logs[0], STACK_TRACES) if logs else None
if stack_traces is None:
    print(f"torch {torch.__version__}: no {STACK_TRACES} in the debug folder's trace log")
else:
    print(f"the trace log's {STACK_TRACES}: {len(stack_traces)} kernels; {kernel}:")
    innermost = {}
    for trace in stack_traces[kernel]:
        lines = trace.strip().splitlines()
        at = max(index for index, line in enumerate(lines) if line.strip().startswith('File "'))
        place = in_package(lines[at].strip().removeprefix('File "')).replace('", line ', ":")
        innermost[place] = lines[at + 1].strip()
    for place, source in innermost.items():
        print(f"  {place}: {source}")
# --8<-- [end:trace-log]
assert (stack_traces is None) == (torch.__version__ < "2.13"), "torch 2.11.0 leaves none in the debug folder"
if stack_traces is not None:
    assert set(stack_traces) == set(handles), "a stack trace for every kernel call"
    assert all("modeling_llama.py" in trace for trace in stack_traces[kernel]), "the same model file, from the traces"
