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


# --8<-- [start:helpers]
def tidy(text):
    """This machine's folders out of torch's messages: the work folder, run folders, cache paths."""
    text = text.replace(f"{work}/", "")
    text = re.sub(r"run_[\d_]+-pid_\d+", "run_<date>-pid_<pid>", text)
    return re.sub(r"/\S+/(\w+\.main\.cpp)", r"<inductor-cache>/.../\1", text)


def compact(code):
    """Generated code without its runs of empty lines."""
    return re.sub(r"\n\s*\n(\s*\n)+", "\n", code).strip()


# --8<-- [end:helpers]


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

# --8<-- [start:run]
replayed = subprocess.run([sys.executable, str(launcher), "run"], cwd=work, env=env, capture_output=True, text=True)
print("python minifier_launcher.py run: exit code", replayed.returncode)
print("\n".join(line for line in tidy(replayed.stderr).splitlines() if line.startswith("torch._inductor.exc.")))
# --8<-- [end:run]
assert replayed.returncode != 0 and "CppCompileError" in replayed.stderr, "the launcher alone replays the failure"

# --8<-- [start:minify]
minified = subprocess.run(
    [sys.executable, str(launcher), "minify", "--no-isolate"],  # --no-isolate: try each graph in this process
    cwd=work,
    env=env,
    capture_output=True,
    text=True,
)
log = [line for line in tidy(minified.stdout + minified.stderr).splitlines() if line.strip()]
steps = [line for line in log
         if line.startswith(("Started off", "Trying", "Strategy:", "FAIL", "SUCCESS", "Made ", "Wrote"))]
first_success = next(i for i, line in enumerate(steps) if line.startswith("SUCCESS"))
print("\n".join(steps[: first_success + 1]))  # the first round in full: each strategy, and whether it still failed
print(f"... {sum(line.startswith('Strategy:') for line in steps[first_success:])} more strategies; from here, "
      "the successes only:")  # fmt: skip
print("\n".join(line for line in steps[first_success + 1 :] if line.startswith(("SUCCESS", "Made ", "Wrote"))))
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

# --8<-- [start:accuracy]
wrong = PROGRAM.replace('"compile_error"', '"accuracy"')  # a relu that computes the wrong value, and compiles
(work / "wrong.py").write_text(wrong)
env_level_4 = dict(env, TORCHDYNAMO_REPRO_LEVEL="4")  # compare compiled with eager; a launcher when they differ
checked = subprocess.run([sys.executable, "wrong.py"], cwd=work, env=env_level_4, capture_output=True, text=True)
print("wrong.py at repro level 4: exit code", checked.returncode)
print("\n".join(line for line in checked.stderr.splitlines() if line.startswith("torch._dynamo.debug_utils.")))
launchers = sorted(work.glob("torch_compile_debug/run_*/minifier/minifier_launcher.py"), key=os.path.getmtime)
accuracy_launcher = launchers[-1]
run_repro_line = next(line.strip() for line in accuracy_launcher.read_text().splitlines()
                      if "run_repro(" in line and not line.strip().startswith("#"))
print("its launcher runs:", run_repro_line.split(", save_dir")[0] + ", ...)")
minified = subprocess.run(
    [sys.executable, str(accuracy_launcher), "minify", "--no-isolate"], cwd=work, env=env_level_4,
    capture_output=True, text=True,
)  # fmt: skip
print("\n".join(line for line in minified.stderr.splitlines() if line.startswith(("Started off", "SUCCESS", "Made "))))
accuracy_repro = (work / "repro.py").read_text()
print(compact(accuracy_repro[accuracy_repro.index("    def forward") : accuracy_repro.index("def load_args")]))
# --8<-- [end:accuracy]
assert checked.returncode != 0 and "AccuracyError" in checked.stderr, "level 4: a wrong result is an error"
assert "accuracy=True" in accuracy_launcher.read_text(), "the launcher's check compares results"
assert minified.returncode == 0 and re.findall(r"torch\.ops\.aten\.(\w+)", accuracy_repro) == ["relu"]
