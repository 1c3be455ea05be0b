"""The joint forward + backward graph AOTAutograd traces, and how a partitioner splits it.

Run it as it is: `python examples/aot-autograd/joint_graph.py`. Tracing and partitioning do not
depend on the device, so this example stays on the CPU everywhere. No code is generated: the
compilers given to AOTAutograd only record the graphs and run them as they are.
"""

import inspect
from collections import Counter

import torch
from functorch.compile import make_boxed_func
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import aot_function, aot_module_simplified
from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

import compile_tools

torch.manual_seed(0)


def readable(graph_module):
    return graph_module.print_readable(print_output=False, include_stride=False, include_device=False)


def ops(graph_module):
    """The ATen operators a graph calls, by short name, e.g. Counter({'mm': 2, 'gelu': 1})."""
    return Counter(
        str(node.target).removeprefix("aten.").split(".")[0]
        for node in graph_module.graph.nodes
        if node.op == "call_function"
    )


class Recorder:
    """Compilers and a partitioner for AOTAutograd that keep the graphs and what the forward saved.

    The partitioner records the joint graph and hands it to `partition` (one of torch's two);
    the forward "compiler" wraps the forward graph so that, at run time, it keeps the tensors the
    forward returned for the backward: every output after the first `num_fwd_outputs`.
    """

    def __init__(self, partition):
        self.partition = partition
        self.saved: list[torch.Tensor] = []

    def partition_fn(self, joint_module, joint_inputs, **kwargs):
        self.joint = joint_module
        self.num_fwd_outputs = kwargs["num_fwd_outputs"]
        self.forward, self.backward = self.partition(joint_module, joint_inputs, **kwargs)
        return self.forward, self.backward

    def fw_compiler(self, graph_module, example_inputs):
        def run(args):
            outputs = graph_module(*args)
            self.saved = [t for t in outputs[self.num_fwd_outputs :] if isinstance(t, torch.Tensor)]
            return outputs

        run._boxed_call = True
        return run

    def bw_compiler(self, graph_module, example_inputs):
        return make_boxed_func(graph_module.forward)


def distinct_storages(tensors):
    """Tensors that share memory (a view, a detach) count once: {storage address: bytes}."""
    return {t.untyped_storage().data_ptr(): t.numel() * t.element_size() for t in tensors}


# --8<-- [start:model]
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
x = torch.randn(32, 8)  # the data: it does not require grad, the four parameters do

recorder = Recorder(min_cut_rematerialization_partition)  # the partitioner Inductor uses
backend = aot_autograd(
    fw_compiler=recorder.fw_compiler, bw_compiler=recorder.bw_compiler, partition_fn=recorder.partition_fn
)
torch._dynamo.reset()
compiled = torch.compile(model, backend=backend)
compiled(x).sum().backward()
# --8<-- [end:model]
assert all(p.grad is not None for p in model.parameters())

# --8<-- [start:joint]
print(readable(recorder.joint))
joint_inputs = [node.name for node in recorder.joint.graph.nodes if node.op == "placeholder"]
print("inputs:", ", ".join(joint_inputs))
# --8<-- [end:joint]
primals = [name for name in joint_inputs if name.startswith("primals")]
tangents = [name for name in joint_inputs if name.startswith("tangents")]
assert len(primals) == 5 and len(tangents) == 1, joint_inputs  # x and 4 parameters; one output's gradient
assert ops(recorder.joint)["tanh"] == 1 and ops(recorder.joint)["tanh_backward"] == 1
(joint_output,) = [node for node in recorder.joint.graph.nodes if node.op == "output"]
assert list(joint_output.args[0]).count(None) == 1, "x does not require grad: its gradient is None"

# --8<-- [start:partitioned]
print(readable(recorder.forward))
print(readable(recorder.backward))
# --8<-- [end:partitioned]
forward_inputs = [n.name for n in recorder.forward.graph.nodes if n.op == "placeholder"]
backward_inputs = [n.name for n in recorder.backward.graph.nodes if n.op == "placeholder"]
assert not any(name.startswith("tangents") for name in forward_inputs)
assert "tanh_backward" not in ops(recorder.forward) and "tanh_backward" in ops(recorder.backward)
assert backward_inputs[-1].startswith("tangents"), backward_inputs

# --8<-- [start:saved]
compiled_saved = distinct_storages(recorder.saved)
print(f"compiled: the forward returns {len(recorder.saved)} tensors for the backward,")
print(f"          in {len(compiled_saved)} distinct storages, {sum(compiled_saved.values())} bytes")
print("          shapes:", [tuple(t.shape) for t in recorder.saved])

eager_packed = []
with torch.autograd.graph.saved_tensors_hooks(lambda t: eager_packed.append(t) or t, lambda t: t):
    model(x).sum().backward()
eager_saved = distinct_storages(eager_packed)
print(f"eager:    autograd packs {len(eager_packed)} saved tensors,")
print(f"          in {len(eager_saved)} distinct storages, {sum(eager_saved.values())} bytes")
print("          shapes:", [tuple(t.shape) for t in eager_packed])
# --8<-- [end:saved]
saved_for_backward = [name for name in backward_inputs if not name.startswith("tangents")]
assert len(recorder.saved) == len(saved_for_backward), "what the forward returns is what the backward takes"
assert (len(recorder.saved), len(eager_packed)) == (3, 4), "eager packs the tanh output twice"
assert sorted(compiled_saved.values()) == sorted(eager_saved.values()), "the same three storages, the same bytes"


# --8<-- [start:pointwise]
def mm_then_pointwise(a, w):
    return torch.nn.functional.gelu(a @ w).sin().cos()


a = torch.randn(64, 32, requires_grad=True)
w = torch.randn(32, 32, requires_grad=True)
results = {}
for partition in (default_partition, min_cut_rematerialization_partition):
    rec = Recorder(partition)
    fn = aot_function(mm_then_pointwise, rec.fw_compiler, rec.bw_compiler, partition_fn=rec.partition_fn)
    fn(a, w).sum().backward()
    saved = distinct_storages(rec.saved)
    results[partition.__name__] = rec
    saved_names = [n.name for n in rec.backward.graph.nodes if n.op == "placeholder" and "tangents" not in n.name]
    print(f"{partition.__name__}:")
    print(f"  saved for backward: {', '.join(saved_names)}")
    print(f"  {len(saved)} distinct storages, {sum(saved.values())} bytes")
    print(f"  forward ops:  {dict(ops(rec.forward))}")
    print(f"  backward ops: {dict(ops(rec.backward))}")
# --8<-- [end:pointwise]
default, min_cut = results["default_partition"], results["min_cut_rematerialization_partition"]
default_bytes = sum(distinct_storages(default.saved).values())
min_cut_bytes = sum(distinct_storages(min_cut.saved).values())
assert min_cut_bytes < default_bytes, (min_cut_bytes, default_bytes)
assert "gelu" not in ops(default.backward) and ops(min_cut.backward)["gelu"] == 1, "min-cut recomputes gelu"
assert ops(min_cut.backward)["sin"] == ops(default.backward)["sin"] + 1, "... and the sin"
assert ops(min_cut.backward)["mm"] == ops(default.backward)["mm"] == 2, "but never the matmul"
assert len(distinct_storages(default.saved)) == 5 and len(distinct_storages(min_cut.saved)) == 3

# --8<-- [start:logs]
torch._dynamo.reset()
with compile_tools.captured_logs(aot_joint_graph=True, aot_graphs=True) as logs:
    keep = lambda graph_module, example_inputs: make_boxed_func(graph_module.forward)  # noqa: E731
    torch.compile(model, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep))(x).sum().backward()
headers = [line.strip() for line in logs.getvalue().splitlines() if line.strip().startswith("=====")]
print("\n".join(headers))
partitioner = inspect.signature(aot_module_simplified).parameters["partition_fn"].default
print("the partitioner when the backend names none:", partitioner.__name__)
# --8<-- [end:logs]
assert partitioner is default_partition
assert [h.split()[1] for h in headers] == ["Joint", "Forward", "Backward"], headers
