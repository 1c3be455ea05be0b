"""A NumPy function Dynamo cannot trace, made into a custom operator: the graph breaks it causes,
the operator that removes them, where the operator shows up at each level, and its gradient.

Run it as it is: `python examples/extending/custom_ops.py`. The operator's body hands tensors to
NumPy, so its tensors stay on the CPU on every machine.
"""
# execdocs: devices=cpu

import numpy as np
import torch

import compile_tools

torch.manual_seed(0)


# --8<-- [start:numpy-function]
# A calibration curve: piecewise linear through these points, flat beyond the ends.
KNOTS = np.array([-3.0, -1.0, 0.0, 1.0, 3.0])
LEVELS = np.array([-1.0, -0.8, 0.0, 0.9, 1.0])


def calibrate_numpy(x: torch.Tensor) -> torch.Tensor:
    """np.interp runs in NumPy's C code: Dynamo can neither trace it nor map it to a torch operator."""
    values = np.interp(x.detach().cpu().numpy(), KNOTS, LEVELS)
    return torch.from_numpy(values).to(x.device, x.dtype)


def layer(x):
    return calibrate_numpy(x * 2).relu() + 1


x = torch.randn(64)
torch._dynamo.reset()
report = torch._dynamo.explain(layer)(x)
print(f"explain: {report.graph_count} graphs, {report.graph_break_count} graph breaks")
for number, graph in enumerate(report.graphs, 1):
    calls = [node.target if node.op == "call_method" else node.target.__name__
             for node in graph.graph.nodes if node.op in ("call_function", "call_method")]
    print(f"  graph {number}: {calls}")
print(f"  {len(report.break_reasons)} break reasons recorded, distinct:")
for reason in sorted({reason.reason.splitlines()[0] for reason in report.break_reasons}):
    print("    ", reason)
try:
    torch.compile(layer, fullgraph=True, backend="eager")(x)
    numpy_error = None
except torch._dynamo.exc.Unsupported as error:
    numpy_error = str(error)
print("fullgraph=True:", "compiles" if numpy_error is None else "raises Unsupported")
# --8<-- [end:numpy-function]
assert report.graph_break_count >= 1, "NumPy's interp breaks the graph"
assert all("numpy" in reason.reason for reason in report.break_reasons), "every break is on the NumPy call"
assert numpy_error is not None, "fullgraph=True refuses it"


# --8<-- [start:custom-op]
@torch.library.custom_op("extending::calibrate", mutates_args=())
def calibrate(x: torch.Tensor) -> torch.Tensor:
    return calibrate_numpy(x)  # at run time the same NumPy code runs, unchanged


@calibrate.register_fake
def _(x):
    # What tracing needs instead of running NumPy: the output's shape, dtype, device and strides.
    return torch.empty_like(x)


def layer_op(x):
    return calibrate(x * 2).relu() + 1


print("schema:", calibrate._opoverload._schema)
# --8<-- [end:custom-op]
assert str(calibrate._opoverload._schema) == "extending::calibrate(Tensor x) -> Tensor"

# --8<-- [start:fullgraph]
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
same = torch.equal(torch.compile(layer_op, fullgraph=True, backend=recorder)(x), layer(x))
print(f"fullgraph=True: {len(recorder.graphs)} graph, same result as the NumPy version: {same}")
print(recorder.graphs[0].print_readable(print_output=False, include_stride=False, include_device=False).strip())
# --8<-- [end:fullgraph]
assert len(recorder.graphs) == 1 and same
op_nodes = [node for node in recorder.graphs[0].graph.nodes if node.target is torch.ops.extending.calibrate.default]
assert len(op_nodes) == 1, "the operator is one node of Dynamo's graph, with the tensor operations around it"

# --8<-- [start:opcheck]
results = torch.library.opcheck(calibrate, (torch.randn(8, 3),))
for test, outcome in results.items():
    print(f"{test:>28}: {outcome}")
# --8<-- [end:opcheck]
assert set(results.values()) == {"SUCCESS"}, results
assert {"test_schema", "test_faketensor", "test_aot_dispatch_dynamic"} <= set(results)


# --8<-- [start:lying-fake]
@torch.library.custom_op("extending::calibrate_lying", mutates_args=())
def calibrate_lying(x: torch.Tensor) -> torch.Tensor:
    return calibrate_numpy(x)


@calibrate_lying.register_fake
def _(x):
    return x.new_empty(x.shape[0])  # wrong: the real output has the shape of x, not one value per row


lying = torch.library.opcheck(calibrate_lying, (torch.randn(8, 3),), raise_exception=False)
for test, outcome in lying.items():
    said = outcome if outcome == "SUCCESS" else f"{type(outcome).__name__}: {str(outcome).strip().splitlines()[0]}"
    print(f"{test:>28}: {said}")
# --8<-- [end:lying-fake]
assert lying["test_faketensor"] != "SUCCESS" and "Shapes" in str(lying["test_faketensor"]), lying


# --8<-- [start:aten-graph]
class Layer(torch.nn.Module):
    def forward(self, x):
        return layer_op(x)


exported = torch.export.export(Layer(), (x,)).run_decompositions()
print(exported.graph_module.code.strip())
# --8<-- [end:aten-graph]
aten_targets = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
assert aten_targets == ["aten.mul.Tensor", "extending.calibrate.default", "aten.relu.default", "aten.add.Tensor"], (
    aten_targets
)

# --8<-- [start:wrapper]
torch._dynamo.reset()
compiled = torch.compile(layer_op, fullgraph=True)
wrapper, *_ = compile_tools.generated_code(compiled, x)
call = compile_tools.lines_between(wrapper, "def call(", "return (")
compile_tools.print_lines(
    call,
    keep=lambda line: "calibrate" in line or "cpp_fused" in line or "def call" in line or " = buf" in line,
    why_cut="input checks, buffer allocations and deletions",
)
print("generated kernels:", compile_tools.kernel_names(wrapper))
# --8<-- [end:wrapper]
kernels = compile_tools.kernel_names(wrapper)
assert len(kernels) == 2, f"one kernel before the operator, one after: Inductor cannot fuse across it: {kernels}"
assert "torch.ops.extending.calibrate.default(" in call, "the operator is called as it is, by the wrapper"
assert "assert_size_stride" in call, "what the operator returns is checked against what the fake promised"
assert call.index(kernels[0]) < call.index("extending.calibrate") < call.index(kernels[1])
assert torch.equal(compiled(x), layer(x))


# --8<-- [start:autograd]
def calibrate_slope(x: torch.Tensor) -> torch.Tensor:
    """The curve's slope at x: that of the segment x falls in, zero beyond the ends."""
    slope = torch.zeros_like(x)
    segments = zip(KNOTS[:-1].tolist(), KNOTS[1:].tolist(), LEVELS[:-1].tolist(), LEVELS[1:].tolist(), strict=True)
    for left, right, low, high in segments:
        slope = torch.where((x > left) & (x <= right), (high - low) / (right - left), slope)
    return slope


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad_output):
    # AOTAutograd traces this function into the backward graph: torch operations only, no NumPy.
    (x,) = ctx.saved_tensors
    return grad_output * calibrate_slope(x)


calibrate.register_autograd(backward, setup_context=setup_context)

# gradcheck compares this backward with finite differences, in float64, at points that keep
# clear of the knots (where the curve has no derivative).
x64 = torch.linspace(-3.95, 3.95, 40, dtype=torch.float64, requires_grad=True)
gradcheck_passed = torch.autograd.gradcheck(calibrate, (x64,), eps=1e-6, atol=1e-5)
print("gradcheck against finite differences:", gradcheck_passed)

torch._dynamo.reset()
leaf = torch.randn(64, requires_grad=True)
torch.compile(layer_op, fullgraph=True)(leaf).sum().backward()  # Inductor, forward and backward
compiled_grad = leaf.grad.clone()
leaf.grad = None
layer_op(leaf).sum().backward()
print("compiled forward and backward, same gradient as eager:", torch.equal(compiled_grad, leaf.grad))
autograd_results = torch.library.opcheck(calibrate, (torch.randn(8, requires_grad=True),))
print("opcheck with an input that requires grad:", set(autograd_results.values()))
# --8<-- [end:autograd]
assert gradcheck_passed
assert torch.equal(compiled_grad, leaf.grad), "the compiled backward runs the registered formula"
assert set(autograd_results.values()) == {"SUCCESS"}, autograd_results


# --8<-- [start:no-fake]
@torch.library.custom_op("extending::calibrate_unfaked", mutates_args=())
def calibrate_unfaked(x: torch.Tensor) -> torch.Tensor:
    return calibrate_numpy(x)  # the same operator, but nobody registered a fake implementation


class Unfaked(torch.nn.Module):
    def forward(self, x):
        return calibrate_unfaked(x * 2).relu()


def first_lines(error: Exception) -> str:
    return f"{type(error).__name__}: " + "\n".join(str(error).strip().splitlines()[:2])


torch._dynamo.reset()
try:
    torch.compile(Unfaked(), fullgraph=True)(x)
except Exception as error:  # noqa: BLE001 - whatever the reader would see
    compile_error = first_lines(error)
try:
    torch.export.export(Unfaked(), (x,))
except Exception as error:  # noqa: BLE001
    export_error = first_lines(error)
print("torch.compile:", compile_error, sep="\n  ")
print("torch.export:", export_error, sep="\n  ")
print("eager still works:", torch.equal(Unfaked()(x), calibrate(x * 2).relu()))
# --8<-- [end:no-fake]
for text in (compile_error, export_error):
    assert "no fake impl registered" in text and "register_fake" in text, text
