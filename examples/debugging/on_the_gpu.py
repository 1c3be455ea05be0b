"""Debugging on the GPU, on the chapter's small Llama: where TORCH_LOGS=output_code puts the code, the
longest Triton kernel of a profile found in that code and in its own file, and the model's source lines
it computes.

Run it as it is: `python examples/debugging/on_the_gpu.py`. It needs a GPU and transformers (the model
is built from a config with random weights, so nothing is downloaded).
"""
# execdocs: devices=cuda

# --8<-- [start:turn-on]
import os
import tempfile

os.environ["TORCH_COMPILE_DEBUG"] = "1"  # before `import torch`: the debug folder and provenance tracking
os.environ["TORCH_COMPILE_DEBUG_DIR"] = tempfile.mkdtemp()
# --8<-- [end:turn-on]

import json
import re
from pathlib import Path

import torch
from torch._inductor.runtime.cache_dir_utils import cache_dir
from torch.profiler import ProfilerActivity, profile

import compile_tools
from debugging._debug_folder import source_lines
from debugging._llama import small_llama, tokens

device = compile_tools.device()
# A cached compile writes no debug files and no output code: compile from scratch.
torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False

# --8<-- [start:output-code-log]
model = small_llama().to(device)
input_ids = tokens(256).to(device)  # 2 sequences of 256 tokens
compiled = torch.compile(model)
with torch.no_grad(), compile_tools.captured_logs(output_code=True) as log:  # TORCH_LOGS="output_code"
    compiled(input_ids=input_ids)
lines = log.getvalue().splitlines()
WRITTEN = "Output code written to:"
written = list(dict.fromkeys(Path(line.removeprefix(WRITTEN).strip()) for line in lines if line.startswith(WRITTEN)))
print(f"TORCH_LOGS=output_code printed {len(lines)} lines: each graph's code, then where it is:")
for path in written:
    print(f"  {WRITTEN} {path}")
print(f"  Inductor's cache folder: {cache_dir()}")
print("  each file: <cache folder>/" + ", <cache folder>/".join(f"{path.parent.name}/{path.name}" for path in written))
# --8<-- [end:output-code-log]
assert all(path.parent.parent == Path(cache_dir()) for path in written), "the code lives in Inductor's cache folder"
assert all(re.fullmatch(r"c\w+\.py", path.name) and path.name[1:3] == path.parent.name for path in written)

# --8<-- [start:profile]
with torch.no_grad():
    compiled(input_ids=input_ids)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as trace:
        compiled(input_ids=input_ids)
        torch.cuda.synchronize()
on_gpu = [event for event in trace.key_averages() if event.device_type == torch.autograd.DeviceType.CUDA]
on_gpu.sort(key=lambda event: event.device_time_total, reverse=True)
print("the profile's longest kernels, GPU time of one call:")
for event in on_gpu[:5]:
    print(f"  {event.device_time_total:7.1f} us  {event.count}x  {event.key[:88]}")
kernel = next(event.key for event in on_gpu if event.key.startswith("triton_"))
print(f"the longest Triton kernel: {kernel}")
# --8<-- [end:profile]

# --8<-- [start:in-output-code]
definition_line = f"{kernel} = async_compile.triton("
graph_folders = sorted(path.parent for path in Path(os.environ["TORCH_COMPILE_DEBUG_DIR"]).rglob("output_code.py"))
folder = next(folder for folder in graph_folders if definition_line in (folder / "output_code.py").read_text())
code = (folder / "output_code.py").read_text().splitlines()
definition = next(index for index, line in enumerate(code) if line.startswith(definition_line))
header = max(index for index in range(definition) if code[index].startswith("# kernel path:"))
comments = code[header:definition]
mapping_lines = comments.index("# Source node to ATen node mapping:")
fragment_lines = comments.index("# Graph fragment:")
print(f"{len(graph_folders)} graph folders in the debug folder; {folder.name}/output_code.py, above the kernel:")
print("\n".join(comments[:mapping_lines]))
print(f"# Source node to ATen node mapping: ... {fragment_lines - mapping_lines - 1} lines")
print(f"# Graph fragment: ... {len(comments) - fragment_lines - 1} lines, the post-grad nodes it computes")
launches = [line.strip() for line in code if line.strip().startswith(f"{kernel}.run(")]
print(f"launched in call() {len(launches)}x")
# --8<-- [end:in-output-code]
assert any((folder / "output_code.py").read_text() == path.read_text() for path in written), "the same code"

# --8<-- [start:kernel-file]
kernel_path = Path(code[header].removeprefix("# kernel path: "))
kernel_file = kernel_path.read_text()
print(f"<cache folder>/{kernel_path.parent.name}/{kernel_path.name}: the Triton kernel alone, {len(kernel_file)} chars")
start = kernel_file.splitlines().index("@triton.jit")
print("\n".join(kernel_file.splitlines()[start : start + 8]))
print(f"in the debug folder: {sorted(entry.name for entry in folder.iterdir())}")
# --8<-- [end:kernel-file]
assert kernel_path.parent.parent == Path(cache_dir()) and f"def {kernel}(" in kernel_file
assert not any(entry.suffix == ".py" and entry.name.startswith("triton_") for entry in folder.iterdir())

# --8<-- [start:lines]
mapping = json.loads((folder / "inductor_provenance_tracking_node_mappings.json").read_text())
handle = next(key for key in mapping["cppCodeToPost"] if key.split(":")[0] == kernel)  # kernel:call number
post_grad = source_lines(folder / "fx_graph_transformed.py")
kernel_lines = [post_grad[node] for node in mapping["cppCodeToPost"][handle] if node in post_grad]
print(f"{handle}: post-grad nodes {mapping['cppCodeToPost'][handle]}, from the lines")
for place, source in dict.fromkeys(kernel_lines):
    print(f"  {place}: {source}")
# --8<-- [end:lines]
files = {place.split(":")[0] for place, _ in kernel_lines}
assert any(file.endswith("modeling_llama.py") for file in files) and all(f.startswith("transformers/") for f in files)
