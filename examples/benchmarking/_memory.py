"""Where a training step's GPU memory goes: per phase, per saved tensor, and in a CUDA-graph pool.

Import it from an example of this chapter (`from benchmarking import _memory`), or copy it next to
your own model: it needs only torch. Every figure is in GiB (2**30 bytes), read from the caching
allocator's counters (`torch.cuda.memory_allocated`, `max_memory_allocated`, `memory_snapshot`).
"""

from collections import defaultdict

import torch

GIB = 2**30


# --8<-- [start:training-step]
class TrainingStep:
    """One training step of `module` (forward and loss, backward, AdamW) split into its phases, so
    that memory can be read between them. `model` owns the parameters; `module` is the model itself
    or a compiled wrapper of it. Mixed precision: float32 weights under bf16 autocast.

    With `mark_step_begin=True`, each step starts with `torch.compiler.cudagraph_mark_step_begin()`,
    which tells CUDA-graph trees (mode="reduce-overhead") that the previous step's outputs are dead.
    """

    def __init__(self, model, module, inputs: dict, *, mark_step_begin: bool = False):
        self.module, self.inputs, self.mark_step_begin = module, inputs, mark_step_begin
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True, capturable=True)

    def forward(self) -> torch.Tensor:
        if self.mark_step_begin:
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            output = self.module(**self.inputs)
        first = output if isinstance(output, torch.Tensor) else output[0]
        return first.float().square().mean()  # a loss that reads the whole output

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def optimizer_step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def __call__(self) -> torch.Tensor:
        loss = self.forward()
        self.backward(loss)
        self.optimizer_step()
        return loss.detach()


# --8<-- [end:training-step]


# --8<-- [start:phase-memory]
def phase_memory(step: TrainingStep, *, warm_steps: int = 3) -> dict[str, float]:
    """GiB at each phase of one step, after `warm_steps` steps (AdamW's state exists, compiling is done):

    held: allocated before the step (weights, AdamW's two moments, the inputs);
    saved: allocated after the forward on top of that, i.e. what the forward keeps for the backward;
    forward_backward_peak / optimizer_peak: the highest allocation on top of `held` in each phase.
    """
    for _ in range(warm_steps):
        step()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    loss = step.forward()
    torch.cuda.synchronize()
    saved = torch.cuda.memory_allocated() - held
    step.backward(loss)
    torch.cuda.synchronize()
    forward_backward_peak = torch.cuda.max_memory_allocated() - held
    torch.cuda.reset_peak_memory_stats()
    step.optimizer_step()
    torch.cuda.synchronize()
    optimizer_peak = torch.cuda.max_memory_allocated() - held
    return {"held": held / GIB, "saved": saved / GIB, "forward_backward_peak": forward_backward_peak / GIB,
            "optimizer_peak": optimizer_peak / GIB}  # fmt: skip


# --8<-- [end:phase-memory]


# --8<-- [start:cuda-graph-pool]
def cuda_graph_pool_gib() -> float:
    """GiB reserved by the allocator's private pools: CUDA graphs' memory, which empty_cache() can't release."""
    return sum(s["total_size"] for s in torch.cuda.memory_snapshot() if tuple(s["segment_pool_id"]) != (0, 0)) / GIB


# --8<-- [end:cuda-graph-pool]


# --8<-- [start:saved-by-eager]
def saved_by_eager(step: TrainingStep, model) -> dict[str, list]:
    """What eager autograd saves for the backward in one forward, grouped by the op that made each tensor
    (its grad_fn: `ToCopyBackward0` for autocast's bf16 copies of the weights, none for what autograd
    made without a graph, such as batch norm's saved statistics). Parameters, which are held
    anyway, and a tensor saved twice count once. Returns {op: [count, bytes]}."""
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen, by_op = set(), defaultdict(lambda: [0, 0])

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            op = type(tensor.grad_fn).__name__ if tensor.grad_fn is not None else "(no grad_fn)"
            by_op[op][0] += 1
            by_op[op][1] += storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = step.forward()
    step.backward(loss)
    step.optimizer.zero_grad(set_to_none=True)
    return dict(by_op)


# --8<-- [end:saved-by-eager]


def op_name(target) -> str:
    """An FX node's operator as a reader searches for it: "mm" for aten.mm.default, "getitem" for operator.getitem."""
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket.__name__
    return getattr(target, "__name__", str(target))


# --8<-- [start:saved-by-compiled]
class InductorRecordingSaved:
    """A Dynamo backend: Inductor as `torch.compile(mode=mode)` runs it, recording what AOTAutograd's
    partitioner saves for the backward. The backward graph's inputs are the saved tensors plus the
    incoming gradients (`tangents_*`); each saved one is named after the forward node that made it.

    `saved` holds (name, op, shape, dtype, bytes) for every saved tensor that is not a parameter or an
    input of the forward (`primals_*`, held anyway), as the partitioner planned it.
    """

    def __init__(self, mode: str = "default"):
        self.mode = mode
        self.saved: list[tuple] = []

    def __call__(self, graph_module, example_inputs):
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        forward_ops = {}

        def inner_compile(graph, inputs, **kwargs):
            if not kwargs.get("is_backward"):
                forward_ops.update({node.name: op_name(node.target) for node in graph.graph.nodes})
            else:
                for node in graph.graph.find_nodes(op="placeholder"):
                    value = node.meta.get("val")
                    if node.name.startswith(("tangents", "primals")) or not isinstance(value, torch.Tensor):
                        continue
                    op = forward_ops.get(node.name, "?")
                    size, dtype = value.numel() * value.element_size(), str(value.dtype).removeprefix("torch.")
                    self.saved.append((node.name, op, tuple(value.shape), dtype, size))
            return compile_fx_inner(graph, inputs, **kwargs)

        patches = torch._inductor.list_mode_options(self.mode)
        return compile_fx(graph_module, example_inputs, inner_compile=inner_compile, config_patches=patches)

    def by_op(self) -> dict[str, list]:
        """{op: [count, bytes]}, the same grouping as saved_by_eager."""
        grouped = defaultdict(lambda: [0, 0])
        for _, op, _, _, size in self.saved:
            grouped[op][0] += 1
            grouped[op][1] += size
        return dict(grouped)


# --8<-- [end:saved-by-compiled]


def print_by_op(label: str, by_op: dict[str, list], *, top: int = 6) -> None:
    """One line per op, largest first, with the total: what a step keeps for its backward."""
    total = sum(size for _, size in by_op.values())
    print(f"{label}: {sum(count for count, _ in by_op.values())} tensors, {total / GIB:.2f} GiB")
    for op, (count, size) in sorted(by_op.items(), key=lambda item: -item[1][1])[:top]:
        print(f"  {op:<32} {count:4d} tensors  {size / GIB:6.3f} GiB  ({size / total:4.0%})")
