"""What TORCH_COMPILE_DEBUG=1 writes to disk for one compiled function.

Run it as it is: `python examples/debugging/debug_folder.py`. The variable is read when torch is
imported, so the example sets it first; the folder goes to a temporary directory. CPU tensors
everywhere, so Inductor generates C++ here, also on a GPU machine.
"""

# --8<-- [start:setup]
import os
import re
import tempfile

os.environ["TORCH_COMPILE_DEBUG"] = "1"  # before `import torch`: read once, at import
# Also read at import: the folder's parent (default: the working directory). Setting
# torch._dynamo.config.debug_dir_root later would miss the trace log, opened at import.
os.environ["TORCH_COMPILE_DEBUG_DIR"] = tempfile.mkdtemp()

import torch  # noqa: E402
from torch._inductor.utils import fresh_cache  # noqa: E402

root = torch._dynamo.config.debug_dir_root  # <TORCH_COMPILE_DEBUG_DIR>/torch_compile_debug
torch._inductor.config.fx_graph_cache = False  # a cache hit would skip the files Inductor writes


def f(x):
    y = torch.sin(x) * 2 + 1
    return y / y.sum(dim=-1, keepdim=True)


torch.compile(f)(torch.randn(8, 16))
# --8<-- [end:setup]
assert torch._inductor.config.trace.enabled, "TORCH_COMPILE_DEBUG=1 turned Inductor's trace on"

# --8<-- [start:tree]
files = {}
for folder, _, names in os.walk(root):
    for name in names:
        path = os.path.join(folder, name)
        relative = re.sub(r"run_[\d_]+-pid_\d+", "run_<date>-pid_<pid>", os.path.relpath(path, root))
        relative = re.sub(r"trace_\w+\.log$", "trace_<random>.log", relative)
        files[relative] = path
for relative in sorted(files):
    print(f"{os.path.getsize(files[relative]) / 1000:6.1f} kB  {relative}")
# --8<-- [end:tree]
by_name = {os.path.basename(relative): path for relative, path in files.items()}
described = ["debug.log", "fx_graph_readable.py", "fx_graph_runnable.py", "fx_graph_transformed.py"]
described += ["ir_pre_fusion.txt", "ir_post_fusion.txt", "output_code.py"]
for name in described:
    assert name in by_name, name
(graph_folder,) = {os.path.dirname(path) for relative, path in files.items() if relative.endswith("output_code.py")}
assert all(os.path.dirname(by_name[name]) == graph_folder for name in described[1:]), "one folder per graph"
assert len(list(os.scandir(os.path.dirname(graph_folder)))) >= 2, "torchinductor/ also has the AOT debug log"
assert any(relative.startswith("tlparse/dedicated_log_torch_trace_") for relative in files), "a trace for tlparse"


# --8<-- [start:helpers]
def read(name):
    with open(by_name[name]) as file:
        return file.read()


def head(name, count):
    lines = read(name).rstrip().splitlines()
    print(f"--- {name} (first {min(count, len(lines))} of {len(lines)} lines)")
    print("\n".join(lines[:count]))


# --8<-- [end:helpers]


# --8<-- [start:fx-graph]
head("fx_graph_readable.py", 20)
print(f"fx_graph_transformed.py identical to it: {read('fx_graph_transformed.py') == read('fx_graph_readable.py')}")
# --8<-- [end:fx-graph]
assert "torch.ops.aten.sum.dim_IntList" in read("fx_graph_readable.py")
assert read("fx_graph_transformed.py") == read("fx_graph_readable.py"), "no FX pass of Inductor changed this graph"
assert "def forward" in read("fx_graph_runnable.py") and "__main__" in read("fx_graph_runnable.py")

# --8<-- [start:ir-pre-fusion]
head("ir_pre_fusion.txt", 16)
pre_nodes = re.findall(r"^(op\w+): (\w+)\(", read("ir_pre_fusion.txt"), re.M)
print("scheduler nodes before fusion:", pre_nodes)
print("--- each node's first line, and the lines of the loop bodies that compute and store:")
for line in read("ir_pre_fusion.txt").splitlines():
    if re.match(r"op\d+: ", line) or re.search(r"= ops\.(reduction|truediv|store)", line):
        print(line)
# --8<-- [end:ir-pre-fusion]
assert [kind for _, kind in pre_nodes] == ["SchedulerNode", "SchedulerNode"], pre_nodes
assert "ops.reduction" in read("ir_pre_fusion.txt") and "ops.truediv" in read("ir_pre_fusion.txt")

# --8<-- [start:ir-post-fusion]
head("ir_post_fusion.txt", 3)
post_nodes = re.findall(r"^(op\w+): (\w+)\(", read("ir_post_fusion.txt"), re.M)
print("nodes in ir_post_fusion.txt:", post_nodes)
# --8<-- [end:ir-post-fusion]
assert post_nodes[0] == ("op0_op1", "OuterLoopFusedSchedulerNode"), post_nodes
assert read("ir_post_fusion.txt").count(".snodes[") == 2, "the fused node lists its two original nodes"

# --8<-- [start:output-code]
code = read("output_code.py")
print([line for line in code.splitlines() if "= async_compile.cpp" in line][0][:70], "...")
print(re.search(r"    def call\(self, args\):.*?return \(\w+, \)", code, re.S).group(0))
# --8<-- [end:output-code]
assert len(re.findall(r"^cpp_fused_\w+ = async_compile\.cpp", code, re.M)) == 1, "one C++ kernel for the whole graph"

# --8<-- [start:cache-hit]
def graph_folders():
    return sum("output_code.py" in names for _, _, names in os.walk(root))


torch._inductor.config.fx_graph_cache = True
with fresh_cache():  # an empty cache folder: the first compile is a miss
    for attempt in ("cache on, first compile (a miss)", "cache on, the same graph again (a hit)"):
        torch._dynamo.reset()
        before = graph_folders()
        torch.compile(f)(torch.randn(8, 16))
        new_folders = graph_folders() - before
        print(f"{attempt}: {new_folders} new folder(s) with output_code.py and the IR files")
# --8<-- [end:cache-hit]
assert new_folders == 0, "a cache hit compiles nothing, and writes no IR files"
