"""The minifier: from a compiler failure to the smallest graph that still fails.

Run it as it is: `python examples/debugging/minifier.py`. A bug is injected into Inductor on
purpose, with the test switch `torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY`: every
`relu` in a C++ kernel becomes code that does not compile. A small program runs in a subprocess
(in a temporary folder, which the minifier writes into) with TORCHDYNAMO_REPRO_AFTER="aot"; then
the launcher script it wrote is run to minify. CPU tensors everywhere, so Inductor generates C++,
also on a GPU machine.
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

work = Path(tempfile.mkdtemp())


def tidy(text):
    """This machine's folders out of torch's messages: the work folder, run folders, cache paths."""
    text = text.replace(f"{work}/", "")
    text = re.sub(r"run_[\d_]+-pid_\d+", "run_<date>-pid_<pid>", text)
    return re.sub(r"/\S+/(\w+\.main\.cpp)", r"<inductor-cache>/.../\1", text)


def compact(code):
    """Generated code without its runs of empty lines."""
    return re.sub(r"\n\s*\n(\s*\n)+", "\n", code).strip()


# --8<-- [start:program]
PROGRAM = """\
import torch

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"  # the bug, on purpose


def fn(x, w):
    y = torch.sin(x) * 2
    z = torch.relu(y @ w)
    return torch.cos(z) + y.sum()


torch.compile(fn)(torch.randn(8, 8), torch.randn(8, 8))
"""
# --8<-- [end:program]

# --8<-- [start:failure]
(work / "program.py").write_text(PROGRAM)
env = dict(os.environ, TORCHDYNAMO_REPRO_AFTER="aot", TORCH_COMPILE_DEBUG_DIR=str(work))
env.update(TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")  # compile for real
failed = subprocess.run([sys.executable, "program.py"], cwd=work, env=env, capture_output=True, text=True)
print("exit code:", failed.returncode)
messages = tidy(failed.stderr).splitlines()
for index, line in enumerate(messages):
    if "Writing minified repro to" in line:
        print(line.split("] ", 1)[1], messages[index + 1].split()[-1], sep="\n    ")
    elif "error:" in line and ".main.cpp" in line or line.startswith("torch._inductor.exc."):
        print(line)
    elif "compile error!" in line:
        print("   ", line.strip())
# --8<-- [end:failure]
(launcher,) = work.glob("torch_compile_debug/run_*/minifier/minifier_launcher.py")
assert failed.returncode != 0 and "CppCompileError" in failed.stderr, "the injected bug broke the C++ compile"

# --8<-- [start:launcher]
source = launcher.read_text()
print(f"--- {tidy(str(launcher))} ({len(source.splitlines())} lines); the config it restores:")
print("\n".join(line for line in source.splitlines() if "inject_relu_bug" in line))
print("--- the graph that failed, as AOTAutograd handed it to Inductor:")
print(compact(source[source.index("class Repro") : source.index("def load_args")]))
# --8<-- [end:launcher]
launcher_ops = re.findall(r"torch\.ops\.aten\.(\w+)", source)
print("operations in the launcher's graph:", launcher_ops)
assert "relu" in launcher_ops and len(launcher_ops) == 7, "the whole graph: sin, mul, mm, relu, cos, sum, add"
assert "inject_relu_bug_TESTING_ONLY = 'compile_error'" in source, "the launcher carries the config that failed"

# --8<-- [start:minify]
minified = subprocess.run(
    [sys.executable, str(launcher), "minify", "--no-isolate"],  # --no-isolate: try each graph in this process
    cwd=work,
    env=env,
    capture_output=True,
    text=True,
)
log = tidy(minified.stdout + minified.stderr).splitlines()
print("\n".join(line for line in log if line.startswith(("Started off", "SUCCESS", "Made ", "Wrote minimal"))))
# --8<-- [end:minify]
assert minified.returncode == 0, minified.stderr[-3000:]
node_counts = [int(n) for line in log for n in re.findall(r"(?:Started off with|to) (\d+) nodes", line)]
assert node_counts[0] == len(launcher_ops) + 3, "nodes: the 7 operations, 2 inputs and the output"
assert node_counts[-1] == 3, "at the end: one input, one operation, the output"

# --8<-- [start:repro]
repro = (work / "repro.py").read_text()  # the launcher writes repro.py into the working folder
print(compact(repro[repro.index("class Repro") : repro.index("load_args._version")]))
# --8<-- [end:repro]
repro_ops = re.findall(r"torch\.ops\.aten\.(\w+)", repro)
assert repro_ops == ["relu"], f"one operation left, the relu that triggers the bug: {repro_ops}"
assert "inject_relu_bug_TESTING_ONLY = 'compile_error'" in repro, "and the config that makes it fail"
