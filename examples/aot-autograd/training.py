"""What torch.compile compiles, and when, in a training step: forward, loss, backward, optimizer.

Run it as it is: `python examples/aot-autograd/training.py`. What gets compiled and when does not
depend on the device, so this example stays on the CPU everywhere. The backend is AOTAutograd
with compilers that only log when they are called and run the graphs as they are.
"""

import torch
from functorch.compile import make_boxed_func
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.utils import counters

import compile_tools

torch.manual_seed(0)


def op_name(node):
    return node.target if isinstance(node.target, str) else node.target.__name__


def without_details(log):
    """The log without the op lists in parentheses, which may change between torch versions."""
    return [event.split(" (")[0] for event in log]


class LoggingBackend:
    """A Dynamo backend: AOTAutograd, with forward and backward compilers that log each call."""

    def __init__(self):
        self.log: list[str] = []
        self.dynamo_graphs: list[torch.fx.GraphModule] = []

    def note(self, event):
        self.log.append(event)
        print(event)

    def __call__(self, graph_module, example_inputs):
        number = len(self.dynamo_graphs) + 1
        self.dynamo_graphs.append(graph_module)
        ops = [op_name(n) for n in graph_module.graph.nodes if n.op in ("call_function", "call_method")]
        self.note(f"  Dynamo graph {number} captured ({', '.join(ops)})")

        def forward_compiler(aten_graph, inputs):
            self.note(f"  graph {number}: forward compiler called")
            return make_boxed_func(aten_graph.forward)

        def backward_compiler(aten_graph, inputs):
            self.note(f"  graph {number}: backward compiler called")
            return make_boxed_func(aten_graph.forward)

        return aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler)(graph_module, example_inputs)


def fresh_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


x, y = torch.randn(32, 8), torch.randn(32, 4)

# --8<-- [start:lazy-backward]
model = fresh_model()
backend = LoggingBackend()
torch._dynamo.reset()
compiled_model = torch.compile(model, backend=backend)
for step in range(2):
    backend.note(f"step {step}: forward")
    loss = nn.functional.mse_loss(compiled_model(x), y)
    backend.note(f"step {step}: loss.backward()")
    loss.backward()
# --8<-- [end:lazy-backward]
assert without_details(backend.log) == [
    "step 0: forward",
    "  Dynamo graph 1 captured",
    "  graph 1: forward compiler called",
    "step 0: loss.backward()",
    "  graph 1: backward compiler called",
    "step 1: forward",
    "step 1: loss.backward()",
], backend.log

# --8<-- [start:dynamic-backward]
model = fresh_model()
backend = LoggingBackend()
torch._dynamo.reset()
compiled_model = torch.compile(model, backend=backend)
x_dynamic = x.clone()
torch._dynamo.mark_dynamic(x_dynamic, 0)  # the batch size becomes a symbol
backend.note("step 0: forward, batch size dynamic")
loss = nn.functional.mse_loss(compiled_model(x_dynamic), y)
backend.note("step 0: loss.backward()")
loss.backward()
# --8<-- [end:dynamic-backward]
assert without_details(backend.log) == [
    "step 0: forward, batch size dynamic",
    "  Dynamo graph 1 captured",
    "  graph 1: forward compiler called",
    "  graph 1: backward compiler called",
    "step 0: loss.backward()",
], backend.log

# --8<-- [start:whole-step]
model = fresh_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step(x, y):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


backend = LoggingBackend()
torch._dynamo.reset()
counters.clear()
compiled_step = torch.compile(train_step, backend=backend)
for step in range(3):
    backend.note(f"step {step}")
    compiled_step(x, y)
print("graph breaks:")
for reason in counters["graph_break"]:
    print("  ", "\n     ".join(reason.splitlines()[:2]))
# --8<-- [end:whole-step]
step_log = [event for event in without_details(backend.log) if not event.startswith("step")]
assert len(backend.dynamo_graphs) == 2, "the forward + loss, and the optimizer step"
assert step_log == [
    "  Dynamo graph 1 captured",
    "  graph 1: forward compiler called",
    "  graph 1: backward compiler called",
    "  Dynamo graph 2 captured",
    "  graph 2: forward compiler called",
], backend.log
assert backend.log.index("step 1") == len(backend.log) - 2, "steps 1 and 2 compile nothing"
assert any("backward" in reason for reason in counters["graph_break"]), "loss.backward() breaks the graph"
assert any("zero_grad" in reason for reason in counters["graph_break"]), "zero_grad is not traced"

# --8<-- [start:optimizer-graph]
forward_graph, optimizer_graph = backend.dynamo_graphs
print(optimizer_graph.print_readable(print_output=False, include_stride=False, include_device=False))
# --8<-- [end:optimizer-graph]
updates = [n for n in optimizer_graph.graph.nodes if n.op == "call_method" and n.target == "add_"]
assert len(updates) == 4, "one in-place update per parameter"
assert "mse_loss" in forward_graph.code and "add_" not in forward_graph.code
trained = fresh_model()
eager_optimizer = torch.optim.SGD(trained.parameters(), lr=0.1)
for _ in range(3):
    nn.functional.mse_loss(trained(x), y).backward()
    eager_optimizer.step()
    eager_optimizer.zero_grad()
for compiled_p, eager_p in zip(model.parameters(), trained.parameters(), strict=True):
    torch.testing.assert_close(compiled_p, eager_p)


# --8<-- [start:lr-scheduler]
def graphs_in_five_steps(lr) -> int:
    """Graphs Dynamo compiles for the optimizer's step over five steps of a scheduler that halves the rate."""
    model = fresh_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    torch._dynamo.reset()
    counters.clear()

    @torch.compile  # Inductor, the default backend
    def update():
        optimizer.step()

    for _ in range(5):
        nn.functional.mse_loss(model(x), y).backward()
        update()
        optimizer.zero_grad()
        scheduler.step()  # a new rate for the next step
    return counters["stats"]["unique_graphs"]


with compile_tools.captured_logs(recompiles=True) as log:
    graphs_with_float = graphs_in_five_steps(0.1)
reason = next(line.split("#")[0].strip() for line in log.getvalue().splitlines() if "['lr'] ==" in line)
print(f"lr=0.1:               {graphs_with_float} graphs in 5 steps; the first recompile's reason: {reason}")
graphs_with_tensor = graphs_in_five_steps(torch.tensor(0.1))
print(f"lr=torch.tensor(0.1): {graphs_with_tensor} graph in 5 steps")
# --8<-- [end:lr-scheduler]
assert graphs_with_float == 5, "every new rate fails the guard on the baked-in constant: one graph per step"
assert graphs_with_tensor == 1, "a tensor rate is an input of the graph: nothing recompiles"
