"""When the numbers are wrong: a planted defect, localised by Inductor's CompilerBisector and
reduced by the accuracy minifier; then the differences between eager and aot_eager that are not bugs.

Run it as it is: `python examples/debugging/wrong_numbers.py` (with `examples/` on PYTHONPATH, as
the chapter's other examples). The defect is a post-grad pass of the user's own, in
`examples/debugging/_wrong_gelu.py`, that rewrites the exact GELU into an approximation.
"""
# CPU tensors only: the defect is in a pass, not in a device's code.
# execdocs: devices=cpu

import contextlib
import io
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from unittest.mock import patch

import torch
import torch._functorch.config
import torch.nn.functional as F
from torch._decomp import decompositions
from torch._dynamo.backends.debugging import aot_eager, boxed_nop
from torch._dynamo.debug_utils import same_two_models
from torch._dynamo.repro import after_aot
from torch._dynamo.utils import compilation_time_metrics, counters
from torch._inductor.compiler_bisector import CompilerBisector
from torch._inductor.decomposition import select_decomp_table
from torch.utils._python_dispatch import TorchDispatchMode

from debugging._wrong_gelu import gelu_pass, make_model

# Compile afresh every time: the bisector recompiles with one thing disabled at a time.
torch._functorch.config.enable_autograd_cache = False
torch._inductor.config.fx_graph_cache = False


# --8<-- [start:symptom]
model, x = make_model()
with torch.no_grad():
    expected = model(x)
    right = torch.compile(model)(x)
    torch._dynamo.reset()
    torch._inductor.config.post_grad_custom_post_pass = gelu_pass  # the defect, planted
    counters.clear()
    wrong = torch.compile(model)(x)
replaced = counters["inductor"]["pattern_matcher_count"]
print(f"inductor, without gelu_pass: max abs diff from eager {(right - expected).abs().max().item():.1e}")
print(f"inductor, with gelu_pass   : max abs diff from eager {(wrong - expected).abs().max().item():.1e}"
      f"   (patterns replaced: {replaced})")  # fmt: skip
# --8<-- [end:symptom]
assert torch.allclose(right, expected, rtol=1e-4, atol=1e-4), "without the pass, Inductor is right"
assert not torch.allclose(wrong, expected, rtol=1e-4, atol=1e-4), "with it, the result is wrong"
assert replaced == 1, "the pass matched the one GELU of the model"


# --8<-- [start:bisect]
checks = []


def check():
    """True when the compiled model is right. The bisector chooses the backend and what to disable."""
    checks.append(CompilerBisector.get_backend())
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model)(x)
    return torch.allclose(out, expected, rtol=1e-4, atol=1e-4)


printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    result = CompilerBisector.do_bisect(check)
print("\n".join(line for line in printed.getvalue().splitlines() if "status" not in line))
print(result)
print(f"check() ran {len(checks)} times:", ", ".join(f"{backend} x{n}" for backend, n in Counter(checks).items()))
# --8<-- [end:bisect]
assert result is not None and (result.backend, result.subsystem) == ("inductor", "post_grad_passes")
assert result.debug_info == "post_grad_custom_post_pass", "it names the pass that was planted"
upper_bound = int(re.search(r"Upper bound of (\d+)", printed.getvalue()).group(1))

# --8<-- [start:passes]
compilation_time_metrics.clear()
torch._dynamo.reset()
with torch.no_grad():
    torch.compile(model)(x)
applied = [key.split(".")[-1] for key in compilation_time_metrics if key.startswith("pass.post_grad_passes.")]
for number, name in enumerate(applied):
    print(f"{number:>2}  {name}")
# --8<-- [end:passes]
assert applied.index("post_grad_custom_post_pass") == result.bisect_number, "the bisect number counts these passes"
assert len(applied) == upper_bound + 1, "the bisector's upper bound is the last of them"
assert applied[2] == "post_grad_custom_pre_pass" and torch._inductor.config.post_grad_custom_pre_pass is None

# --8<-- [start:confirm]
torch._dynamo.reset()
with torch.no_grad(), torch._inductor.config.patch(disabled_passes="POST_GRAD_CUSTOM_POST_PASS"):
    fixed = torch.compile(model)(x)
print(
    f"disabled_passes='POST_GRAD_CUSTOM_POST_PASS': max abs diff from eager {(fixed - expected).abs().max().item():.1e}"
)
# --8<-- [end:confirm]
assert torch.allclose(fixed, expected, rtol=1e-4, atol=1e-4), "without that one pass, the result is right again"

# --8<-- [start:level-4]
PROGRAM = """\
import torch
from debugging._wrong_gelu import gelu_pass, make_model

torch._inductor.config.post_grad_custom_post_pass = gelu_pass  # the defect
model, x = make_model()
with torch.no_grad():
    torch.compile(model)(x)
"""
work = Path(tempfile.mkdtemp())
(work / "program.py").write_text(PROGRAM)
examples_folder = str(Path(__file__).resolve().parents[1])  # where `debugging._wrong_gelu` is
env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [examples_folder, os.environ.get("PYTHONPATH")])))
env.update(TORCH_COMPILE_DEBUG_DIR=str(work), TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
env.update(TORCHDYNAMO_REPRO_AFTER="aot", TORCHDYNAMO_REPRO_LEVEL="4")
level_4 = subprocess.run([sys.executable, "program.py"], cwd=work, env=env, capture_output=True, text=True)
print("program.py at repro level 4: exit code", level_4.returncode)
launchers = list(work.glob("torch_compile_debug/run_*/minifier/minifier_launcher.py"))
print("AccuracyError:", "AccuracyError" in level_4.stderr, "  launchers written:", len(launchers))
# --8<-- [end:level-4]
assert level_4.returncode == 0 and "AccuracyError" not in level_4.stderr, "level 4 did not see the defect"
assert not list(work.glob("torch_compile_debug/run_*/minifier/*.py")), "and wrote no launcher"

# --8<-- [start:why-blind]
compared = []


def spy(gm, *args, **kwargs):
    """Record the reference graph that the level-4 check runs, then check as torch does."""
    compared.append(sorted({str(node.target) for node in gm.graph.nodes if node.op == "call_function"}))
    return same_two_models(gm, *args, **kwargs)


torch._dynamo.reset()
with patch.object(after_aot, "same_two_models", spy), torch._dynamo.config.patch(repro_after="aot", repro_level=4):
    with torch.no_grad():
        torch.compile(model)(x)  # in this process, the same check as the program's
print("the level-4 check's reference graph:", ", ".join(compared[0]))
# --8<-- [end:why-blind]
assert "aten.sigmoid.default" in compared[0] and "aten.erf.default" not in compared[0], "the pass had already run on it"

# --8<-- [start:after-dynamo]
logged = []
handler = logging.Handler()
handler.emit = logged.append  # what torch logs while it checks
logging.getLogger("torch._dynamo.debug_utils").addHandler(handler)
torch._dynamo.reset()
with torch._dynamo.config.patch(repro_after="dynamo", repro_level=4, debug_dir_root=str(work / "after_dynamo")):
    with torch.no_grad():
        torch.compile(model)(x)  # TORCHDYNAMO_REPRO_AFTER=dynamo, TORCHDYNAMO_REPRO_LEVEL=4, in this process
logging.getLogger("torch._dynamo.debug_utils").removeHandler(handler)
print("repro level 4, after dynamo: no AccuracyError; what its check logged:")
for record in logged:
    print("   ", record.getMessage().split(". ")[0], "|", repr(record.exc_info[1]) if record.exc_info else "")
# --8<-- [end:after-dynamo]
assert any("Skipping this graph" in record.getMessage() for record in logged), "the check raised and was skipped"
assert any(isinstance(record.exc_info and record.exc_info[1], ValueError) for record in logged)
assert not (work / "after_dynamo").exists(), "no launcher either"

# --8<-- [start:level-3]
level_3 = subprocess.run([sys.executable, "program.py"], cwd=work, env=dict(env, TORCHDYNAMO_REPRO_LEVEL="3"),
                         capture_output=True, text=True)  # fmt: skip
(launcher,) = work.glob("torch_compile_debug/run_*/minifier/minifier_launcher.py")
source = launcher.read_text()
print("program.py at repro level 3: exit code", level_3.returncode)
print("   ", re.sub(r"run_[\d_]+-pid_\d+", "run_<date>-pid_<pid>", str(launcher.relative_to(work))))
print("its graph:", ", ".join(re.findall(r"torch\.ops\.aten\.(\w+)", source)))
print("its run_repro call has accuracy=False:", "accuracy=False, command='minify'" in source)
print("its config sets post_grad_custom_post_pass:", "post_grad_custom_post_pass" in source)
print("in torch._inductor.config._save_config_ignore:",
      "post_grad_custom_post_pass" in torch._inductor.config._save_config_ignore)  # fmt: skip
# --8<-- [end:level-3]
launcher_ops = re.findall(r"torch\.ops\.aten\.(\w+)", source)
assert level_3.returncode == 0 and "erf" in launcher_ops and "sigmoid" not in launcher_ops, "the graph before the pass"
assert "post_grad_custom_post_pass" not in source, "the launcher does not carry the pass"
assert "accuracy=False, command='minify'" in source, "a level-3 launcher checks for an exception, not a difference"

# --8<-- [start:isolate]
PLANT = "from debugging._wrong_gelu import gelu_pass\ntorch._inductor.config.post_grad_custom_post_pass = gelu_pass\n"


def with_the_pass(script):
    """The script with the two lines a reader adds by hand, after the config it restores."""
    return script.replace("isolate_fails_code_str = None", PLANT + "\nisolate_fails_code_str = None", 1)


launcher.write_text(with_the_pass(source))
isolated = subprocess.run([sys.executable, str(launcher), "minify", "--accuracy"], cwd=work, env=env,
                          capture_output=True, text=True)  # fmt: skip
print("python minifier_launcher.py minify --accuracy: exit code", isolated.returncode)
print(isolated.stderr.strip().splitlines()[-1])
(child,) = work.glob("isolate/*.py")  # the script the check ran in a fresh process
print("the child's script sets post_grad_custom_post_pass:", "post_grad_custom_post_pass" in child.read_text())
# --8<-- [end:isolate]
assert PLANT in launcher.read_text(), "the two lines are in the launcher"
assert isolated.returncode != 0 and "Input graph did not fail the tester" in isolated.stderr
assert "post_grad_custom_post_pass" not in child.read_text()

# --8<-- [start:minify]
minified = subprocess.run([sys.executable, str(launcher), "minify", "--accuracy", "--no-isolate"], cwd=work, env=env,
                          capture_output=True, text=True)  # fmt: skip
print("\n".join(line for line in minified.stderr.splitlines() if line.startswith(("Started off", "SUCCESS", "Made "))))
repro = (work / "repro.py").read_text()
forward = repro[repro.index("    def forward") : repro.index("def load_args")]
print(re.sub(r"\n\s*\n", "\n", forward).rstrip())
print("repro.py sets post_grad_custom_post_pass:", "post_grad_custom_post_pass" in repro)
# --8<-- [end:minify]
repro_ops = re.findall(r"torch\.ops\.aten\.(\w+)", repro)
assert minified.returncode == 0, minified.stderr[-3000:]
assert sorted(repro_ops) == ["add", "erf", "mul", "mul", "mul"], f"the exact GELU, as the pass matches it: {repro_ops}"
assert "post_grad_custom_post_pass" not in repro, "repro.py needs the two lines again"

# --8<-- [start:repro-run]
ran = subprocess.run([sys.executable, "repro.py"], cwd=work, env=env, capture_output=True, text=True)
print("python repro.py: exit code", ran.returncode, "  AccuracyError:", "AccuracyError" in ran.stderr)
# --8<-- [end:repro-run]
assert ran.returncode == 0 and "AccuracyError" not in ran.stderr, "without the pass, the repro compiles right"
assert "accuracy=True, command='run'" in repro, "and it did compare: repro.py runs the accuracy check"
shutil.rmtree(work)  # the program, the launcher, its checkpoints and repro.py


# --8<-- [start:versus-eager]
def versus_eager(label, fn, x, backend="aot_eager"):
    """Eager and compiled from the same seed: bitwise equal?"""
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager = fn(x)
    compiled_fn = torch.compile(fn, backend=backend)
    torch.manual_seed(0)
    compiled = compiled_fn(x)
    equal = torch.equal(compiled, eager)
    difference = (compiled - eager).abs().max().item()
    print(f"{label:<34} {backend:<27} bitwise equal: {equal!s:<5}   max abs diff {difference:.1e}")
    return equal, eager, compiled


generator = torch.Generator().manual_seed(0)
a = torch.randn(64, 256, generator=generator)
image = torch.randn(2, 8, 17, 23, generator=generator)


def in_place(x):
    y = x * 2
    y.mul_(3).add_(1)
    y[:, ::2].sin_()  # into a view of y
    return y


equal = {
    "in-place": versus_eager("in-place ops and a view", in_place, a)[0],
    "dropout 0.1": versus_eager("dropout(p=0.1), training", lambda t: F.dropout(t, 0.1, training=True), a)[0],
    "rand_like": versus_eager("x + rand_like(x)", lambda t: t + torch.rand_like(t), a)[0],
    "nearest": versus_eager("interpolate, nearest", lambda t: F.interpolate(t, scale_factor=1.7), image)[0],
}
_, dropout_eager, dropout_compiled = versus_eager(
    "dropout(p=0.15), training", lambda t: F.dropout(t, 0.15, training=True), a
)
_, bilinear_eager, bilinear_compiled = versus_eager(
    "interpolate, bilinear", lambda t: F.interpolate(t, scale_factor=1.7, mode="bilinear"), image
)
_, decomp_eager, decomp_compiled = versus_eager(
    "dropout(p=0.1), training", lambda t: F.dropout(t, 0.1, training=True), a, "aot_eager_decomp_partition"
)
# --8<-- [end:versus-eager]
assert all(equal.values()), equal
assert not torch.equal(dropout_compiled, dropout_eager) and torch.equal(dropout_compiled != 0, dropout_eager != 0)
assert not torch.equal(bilinear_compiled, bilinear_eager)
assert not torch.equal(decomp_compiled != 0, decomp_eager != 0), "another mask"


# --8<-- [start:ops]
class Ops(TorchDispatchMode):
    """The ATen operations that eager runs, as they reach the dispatcher."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def graph_ops(fn, x):
    """The operations of the forward graph that aot_eager runs (aot_eager with a recording compiler)."""
    graphs = []

    def record(gm, example_inputs):
        graphs.append([node.target.__name__.split(".")[0] for node in gm.graph.nodes if node.op == "call_function"])
        return boxed_nop(gm, example_inputs)

    torch._dynamo.reset()
    torch.compile(fn, backend=lambda gm, inputs: aot_eager(gm, inputs, fw_compiler=record))(x)
    return graphs[0]


def collapsed(names):
    """Each operation once, in order of first use, with its count when more than one."""
    counts = Counter(names)
    return ", ".join(name if count == 1 else f"{name} x{count}" for name, count in counts.items())


for label, fn, t in [
    ("in-place", in_place, a),
    ("dropout", lambda t: F.dropout(t, 0.15, training=True), a),
    ("bilinear", lambda t: F.interpolate(t, scale_factor=1.7, mode="bilinear"), image),
]:
    with Ops() as eager_ops:
        fn(t)
    print(f"{label:<9} eager    : {collapsed(eager_ops.names)}")
    print(f"{'':<9} aot_eager: {collapsed(name for name in graph_ops(fn, t) if name != 'getitem')}")
# --8<-- [end:ops]

# --8<-- [start:dropout-scale]
for p in (0.1, 0.15):
    eager_scale = torch.ones(1).div_(1 - p).item()  # eager's dropout: noise.div_(1 - p), in float32
    native_scale = torch.ones(1).mul_(1 / (1 - p)).item()  # native_dropout: mul_(scale), scale = 1 / (1 - p) in double
    print(f"p={p}: eager scales the kept values by {eager_scale:.10f}, native_dropout by {native_scale:.10f}")
# --8<-- [end:dropout-scale]
assert torch.ones(1).div_(0.9).item() == torch.ones(1).mul_(1 / 0.9).item()
assert torch.ones(1).div_(0.85).item() != torch.ones(1).mul_(1 / 0.85).item()
one_step_up = torch.nextafter(torch.ones(1).div_(0.85), torch.tensor(2.0))
assert torch.equal(one_step_up, torch.ones(1).mul_(1 / 0.85)), "the two factors are neighbouring float32 values"
kept = (dropout_eager != 0).float()  # the same mask on both sides, asserted above
assert torch.equal(dropout_eager, a * kept.div_(0.85)), "eager: x * (mask / (1 - p)), the division in float32"
assert torch.equal(dropout_compiled, (a * (dropout_eager != 0)).mul_(1 / 0.85)), "native_dropout: x * mask * scale"

# --8<-- [start:bilinear]
python_decomposition = decompositions._upsample_linear_vec(image, None, False, [1.7, 1.7])
print("aot_eager == _upsample_linear_vec called eagerly:", torch.equal(bilinear_compiled, python_decomposition))
print(f"elements that differ from eager: {(bilinear_compiled != bilinear_eager).float().mean().item():.0%}")
reference = F.interpolate(image.double(), scale_factor=1.7, mode="bilinear")
for label, out in (("eager", bilinear_eager), ("aot_eager", bilinear_compiled)):
    print(f"{label:>9} vs float64: max abs {(out.double() - reference).abs().max().item():.2e}")
# --8<-- [end:bilinear]
assert torch.equal(bilinear_compiled, python_decomposition), "aot_eager ran the Python decomposition"
eager_error, compiled_error = (
    (out.double() - reference).abs().max().item() for out in (bilinear_eager, bilinear_compiled)
)
assert compiled_error < 2 * eager_error and eager_error < 2 * compiled_error, "two roundings of the same size"

# --8<-- [start:fallback-random]
for fallback_random in (False, True):
    with torch._inductor.config.patch(fallback_random=fallback_random):
        decomposition = select_decomp_table().get(torch.ops.aten.native_dropout.default)
    where = f"{decomposition.__module__}.{decomposition.__name__}" if decomposition else "none: eager's kernel"
    print(f"fallback_random={fallback_random!s:<5}: aten.native_dropout decomposes to {where}")
torch._dynamo.reset()
with torch._inductor.config.patch(fallback_random=True):
    same_mask = versus_eager(
        "dropout(p=0.1), fallback_random", lambda t: F.dropout(t, 0.1, training=True), a, "aot_eager_decomp_partition"
    )[0]
# --8<-- [end:fallback-random]
assert same_mask, "with fallback_random, select_decomp_table leaves native_dropout to eager's kernel"
