"""torch.export: the whole model as one graph, ahead of time, or an error that says why not.

Run it as it is: `python examples/deploying/export.py` (on a GPU if torch sees one).
"""

import torch
from torch.export import Dim

import compile_tools
from deploying import _model

device = compile_tools.device()


def first_line(error: Exception) -> str:
    """The error's type and the first line of its message: the rest is hints and a stack."""
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"


# --8<-- [start:export]
model = _model.build(device)
x = torch.randn(8, 64, device=device)

exported = torch.export.export(model, (x,))
print(type(exported).__name__)
print(exported.graph_module.code.strip())
# --8<-- [end:export]
call_nodes = [node for node in exported.graph.nodes if node.op == "call_function"]
assert all(isinstance(node.target, torch._ops.OpOverload) for node in call_nodes), "every node is an ATen operator"
assert not any(node.op == "call_module" for node in exported.graph.nodes), "no module calls left: one flat graph"

# --8<-- [start:signature]
signature = exported.graph_signature
for spec in signature.input_specs[:3] + signature.input_specs[-1:]:
    print(f"input  {spec.arg.name:24} {spec.kind.name:12} {spec.target or ''}")
print(f"... {len(signature.input_specs) - 4} more PARAMETER inputs cut")
for spec in signature.output_specs:
    print(f"output {spec.arg.name:24} {spec.kind.name}")
print("parameters held by the program:", len(exported.state_dict))
# --8<-- [end:signature]
kinds = [spec.kind.name for spec in signature.input_specs]
assert kinds.count("PARAMETER") == len(list(model.parameters())) == len(exported.state_dict)
assert kinds.count("USER_INPUT") == 1 and kinds[-1] == "USER_INPUT", "the parameters come first, then x"
assert [spec.kind.name for spec in signature.output_specs] == ["USER_OUTPUT"]

# --8<-- [start:run]
runnable = exported.module()  # an nn.Module again, running the exported graph
torch.testing.assert_close(runnable(x), model(x))
print("the exported program matches eager on the example input")
try:
    runnable(torch.randn(4, 64, device=device))
    batch_of_four = "runs"
except Exception as error:
    batch_of_four = first_line(error)
print("a batch of 4:", batch_of_four)
# --8<-- [end:run]
assert batch_of_four != "runs", "exported without dynamic shapes, the batch size is fixed to 8"
assert "8" in batch_of_four, "the failing check names the size it was exported with"


# --8<-- [start:graph-break]
class Gated(torch.nn.Module):
    """The model behind a Python branch on the input's values."""

    def __init__(self):
        super().__init__()
        self.inner = _model.build(device)

    def forward(self, x):
        if x.sum() > 0:  # a data-dependent branch
            return self.inner(x)
        return self.inner(-x)


gated = Gated()
torch._dynamo.reset()  # a fresh Dynamo, as a new process would have
report = torch._dynamo.explain(gated)(x)
print(f"torch.compile: {report.graph_count} graphs, {report.graph_break_count} graph break")
torch.testing.assert_close(torch.compile(gated)(x), gated(x))  # and it runs
export_errors = {}
for strict in (False, True):
    try:
        torch.export.export(gated, (x,), strict=strict)
    except Exception as error:
        export_errors[strict] = error
        print(f"torch.export(strict={strict}) raises {first_line(error)}")
# --8<-- [end:graph-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), "torch.compile splits the model and runs it"
assert set(export_errors) == {False, True}, "export refuses the branch in both modes"
assert "data-dependent" in str(export_errors[False]).lower() and "data-dependent" in str(export_errors[True]).lower()


# --8<-- [start:cond]
class GatedCond(Gated):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.inner(x), lambda x: self.inner(-x), (x,))


gated_cond = GatedCond()
exported_cond = torch.export.export(gated_cond, (x,))
cond_nodes = [node for node in exported_cond.graph.nodes if node.target is torch.ops.higher_order.cond]
predicate, true_graph, false_graph, operands = cond_nodes[0].args
print(f"exported; the branch is one node: cond({predicate}, {true_graph}, {false_graph}, <{len(operands)} operands>)")
for sign in (1, -1):  # inputs that take each branch
    torch.testing.assert_close(exported_cond.module()(sign * x), gated(sign * x))
print("matches the Python branch for inputs that take either side")
# --8<-- [end:cond]
assert len(cond_nodes) == 1


# --8<-- [start:dynamic]
batch = Dim("batch", min=2, max=1024)
exported_dynamic = torch.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
placeholder = [node for node in exported_dynamic.graph.nodes if node.op == "placeholder"][-1]
print("x in the graph:", tuple(placeholder.meta["val"].shape))
print("range constraints:", exported_dynamic.range_constraints)
runnable = exported_dynamic.module()
for rows in (2, 37, 1024):
    rows_of_ones = torch.ones(rows, 64, device=device)
    torch.testing.assert_close(runnable(rows_of_ones), model(rows_of_ones))
print("batches of 2, 37 and 1024 match eager")
try:
    runnable(torch.randn(1025, 64, device=device))
    too_large = "runs"
except Exception as error:
    too_large = first_line(error)
print("a batch of 1025:", too_large)
# --8<-- [end:dynamic]
(symbol_range,) = exported_dynamic.range_constraints.values()
assert (symbol_range.lower, symbol_range.upper) == (2, 1024), "the range of Dim('batch')"
assert isinstance(placeholder.meta["val"].shape[0], torch.SymInt), "the batch is a symbol in the graph"
assert too_large != "runs" and "1024" in too_large, "above the declared maximum, the exported program refuses the input"


# --8<-- [start:violations]
class Pairs(torch.nn.Module):
    """Sums rows two by two: it needs an even batch."""

    def forward(self, x):
        return x.view(-1, 2, 64).sum(1)


class FixedBatch(torch.nn.Module):
    """A reshape with the batch size written in: it works for 8 rows only."""

    def forward(self, x):
        return x.view(8, 64) * 2


violations = {}
for module in (Pairs(), FixedBatch()):
    try:
        torch.export.export(module, (x,), dynamic_shapes={"x": {0: batch}})
    except Exception as error:
        violations[type(module).__name__] = error
        lines = str(error).splitlines()
        reasons = [line.strip() for line in lines if line.strip().startswith("- ")]
        print(f"{type(module).__name__}: {first_line(error)}")
        print(f"  {reasons[0]}" + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""))
        print("\n".join(lines[lines.index("Suggested fixes:") :][:3]))
# --8<-- [end:violations]
assert set(violations) == {"Pairs", "FixedBatch"}
assert all("Constraints violated" in str(error) for error in violations.values())
assert "2*_batch" in str(violations["Pairs"]), "the fix for Pairs: an even batch"
assert "batch = 8" in str(violations["FixedBatch"]), "the fix for FixedBatch: no dynamic batch at all"

# --8<-- [start:fix]
half_batch = Dim("half_batch", min=1, max=512)
exported_pairs = torch.export.export(Pairs(), (x,), dynamic_shapes={"x": {0: 2 * half_batch}})
print("x in the graph:", tuple(next(iter(exported_pairs.graph.nodes)).meta["val"].shape))
six_rows = torch.ones(6, 64, device=device)
torch.testing.assert_close(exported_pairs.module()(six_rows), torch.full((3, 64), 2.0, device=device))
print("a batch of 6 gives 3 sums")
# --8<-- [end:fix]
assert "2*" in str(next(iter(exported_pairs.graph.nodes)).meta["val"].shape[0]), "the batch is twice a symbol"
