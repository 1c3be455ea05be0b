"""Why does a compiled training step use more (or less) GPU memory? Peaks per phase, eager against compiled,
what the partitioner saves for the backward, Inductor's buffer reuse, the CUDA-graph pool of
mode="reduce-overhead", and the activation-memory budget traded against step time.

Run it as it is: `python examples/benchmarking/memory.py`. It needs a GPU and takes a few minutes
there, most of it compiling BERT-base's training step seven times.
"""
# execdocs: devices=cuda

import itertools
import json
import re

import torch
import torch._functorch.config
from torch._inductor.utils import run_and_get_code

import compile_tools
from benchmarking import _harness, _memory, _unpadded, _zoo  # noqa: F401  _unpadded registers "sdpa_unpadded"

device = compile_tools.device()
# Every compile below starts from scratch: a cached result would skip the partitioner this example watches.
torch._functorch.config.enable_autograd_cache = False
torch._inductor.config.fx_graph_cache = False
MODELS = ["BERT-base", "ResNet-50"]  # 16 sequences of 512 tokens; 32 images of 224 x 224


# --8<-- [start:setup]
def training_step(name, *, mode=None, mark_step_begin=False, attention=None):
    """A fresh model (same seed, same weights) and its training step: eager when mode is None, else
    compiled with a backend that records what the partitioner saves; `attention` names another
    attention implementation of transformers."""
    model = _zoo.build(name, device)
    if attention:
        model.set_attn_implementation(attention)
    inputs = _zoo.input_maker(name, model, device, train=True)()
    backend = None if mode is None else _memory.InductorRecordingSaved(mode)
    module = model if backend is None else torch.compile(model, backend=backend)
    return model, _memory.TrainingStep(model, module, inputs, mark_step_begin=mark_step_begin), backend


def measured(name, **how):
    """One configuration's memory per phase, its step time, and (compiled) what it saved and the
    generated code's allocations; then everything it allocated is released."""
    model, step, backend = training_step(name, **how)
    result = {}
    if backend:
        _, sources = run_and_get_code(step)  # the first step compiles the forward and the backward
        code = "\n".join(sources)
        result["allocations"] = len(re.findall(r"= empty_strided_\w+\(", code))
        result["reuses"] = len(re.findall(r"#\s*reuse$", code, flags=re.MULTILINE))
        result["saved_by_op"], result["saved_tensors"] = backend.by_op(), backend.saved
        result["planned"] = sum(size for _, size in result["saved_by_op"].values()) / _memory.GIB
    result.update(_memory.phase_memory(step))
    result["pool"] = _memory.cuda_graph_pool_gib()
    result["step_ms"] = compile_tools.timing_ms(step)
    torch.cuda.empty_cache()
    result["reserved"] = torch.cuda.memory_reserved() / _memory.GIB  # what the process keeps between steps
    del model, step, backend
    _harness.release()
    return result


def print_row(label, r):
    print(f"{label:<28} {r['held']:6.2f} {r['saved']:19.2f} {r['forward_backward_peak']:22.2f} "
          f"{r['optimizer_peak']:11.2f} {r['step_ms']['median']:8.1f}")  # fmt: skip


HEADER = (f"{'GiB':<28} {'held':>6} {'saved for backward':>19} {'forward+backward peak':>22} {'AdamW peak':>11} "
          f"{'step ms':>8}")  # fmt: skip
# --8<-- [end:setup]


# --8<-- [start:peaks]
rows = {}
print(HEADER)
for name in MODELS:
    for label, how in (("eager", {}), ("compiled", {"mode": "default"})):
        rows[name, label] = measured(name, **how)
        print_row(f"{name}, {label}", rows[name, label])
# --8<-- [end:peaks]
for name in MODELS:
    assert abs(rows[name, "compiled"]["held"] - rows[name, "eager"]["held"]) < 0.05, "the same weights and AdamW state"
bert, resnet = (rows[name, "compiled"]["saved"] / rows[name, "eager"]["saved"] for name in MODELS)
assert bert > 1.5, "compiled BERT-base keeps far more for its backward than eager"
assert resnet < 1.0, "compiled ResNet-50 keeps a little less"


# --8<-- [start:saved]
for name in MODELS:
    model, step, _ = training_step(name)
    _memory.print_by_op(f"{name}, eager autograd saves", _memory.saved_by_eager(step, model), top=5)
    del model, step
    _harness.release()
    _memory.print_by_op(f"{name}, the partitioner saves", rows[name, "compiled"]["saved_by_op"], top=5)
    print(f"  allocated after the compiled forward: {rows[name, 'compiled']['saved']:.2f} GiB\n")
# --8<-- [end:saved]
for name in MODELS:
    compiled = rows[name, "compiled"]
    assert abs(compiled["planned"] - compiled["saved"]) < 0.1 * compiled["saved"] + 0.05, (
        f"{name}: the partitioner's plan ({compiled['planned']:.2f} GiB) is what the forward leaves allocated"
    )


# --8<-- [start:attention-scores]
ATTENTION_SCORES = (16, 12, 512, 512)  # (batch, heads, query, key): one score per pair of tokens, per head
rows["BERT-base", "compiled, no mask"] = measured("BERT-base", mode="default", attention="sdpa_unpadded")


def score_matrices(label):
    """The saved tensors of the attention scores' shape: their dtypes and GiB."""
    scores = [(dtype, size) for _, _, shape, dtype, size in rows["BERT-base", label]["saved_tensors"]
              if shape == ATTENTION_SCORES]  # fmt: skip
    return sorted({dtype for dtype, _ in scores}), len(scores), sum(size for _, size in scores) / _memory.GIB


for label in ("compiled", "compiled, no mask"):
    dtypes, count, gib = score_matrices(label)
    print(f"BERT-base, {label}: {count} saved tensors of shape {ATTENTION_SCORES} ({', '.join(dtypes) or '-'}), "
          f"{gib:.2f} GiB; saved in all {rows['BERT-base', label]['saved']:.2f} GiB")  # fmt: skip
print(f"BERT-base, eager: saved in all {rows['BERT-base', 'eager']['saved']:.2f} GiB")
# --8<-- [end:attention-scores]
eager_saved, masked, unmasked = (
    rows["BERT-base", label]["saved"] for label in ("eager", "compiled", "compiled, no mask")
)
assert score_matrices("compiled")[2] > 0.5 * (masked - eager_saved), "the score matrices are most of the excess"
assert score_matrices("compiled, no mask")[1] == 0, "with no mask, SDPA's fused kernel keeps no score matrix"
assert unmasked < eager_saved, "and compiled keeps less than eager"


# --8<-- [start:buffer-reuse]
# Both kinds of reuse off: a dead buffer taken for a new one, and a kernel writing over its own input.
with torch._inductor.config.patch(allow_buffer_reuse=False, inplace_buffers=False):
    rows["BERT-base", "no reuse"] = measured("BERT-base", mode="default")
print(f"{'BERT-base':<12} {'saved for backward':>19} {'forward+backward peak':>22} {'step ms':>8} "
      f"{'allocations':>12} {'buffers reused':>15}")  # fmt: skip
for label in ("compiled", "no reuse"):
    r = rows["BERT-base", label]
    print(f"{label:<12} {r['saved']:19.2f} {r['forward_backward_peak']:22.2f} {r['step_ms']['median']:8.1f} "
          f"{r['allocations']:12d} {r['reuses']:15d}")  # fmt: skip
# --8<-- [end:buffer-reuse]
with_reuse, without_reuse = rows["BERT-base", "compiled"], rows["BERT-base", "no reuse"]
assert without_reuse["reuses"] == 0 < with_reuse["reuses"], "the switch removes every reuse line"
assert without_reuse["allocations"] > with_reuse["allocations"], "each buffer not reused is a new allocation"
assert without_reuse["forward_backward_peak"] > with_reuse["forward_backward_peak"], "and the peak grows"


# --8<-- [start:cuda-graph-pool]
rows["BERT-base", "reduce-overhead"] = measured("BERT-base", mode="reduce-overhead", mark_step_begin=True)
print(f"{'GiB':<28} {'kept between steps':>18} {'in CUDA-graph pools':>20} {'step ms':>8}")
for label in ("eager", "compiled", "reduce-overhead"):
    r = rows["BERT-base", label]
    print(f"{'BERT-base, ' + label:<28} {r['reserved']:18.2f} {r['pool']:20.2f} {r['step_ms']['median']:8.1f}")
# --8<-- [end:cuda-graph-pool]
graphs, default = rows["BERT-base", "reduce-overhead"], rows["BERT-base", "compiled"]
assert default["pool"] == 0 < graphs["pool"], "only reduce-overhead keeps a private pool"
assert graphs["reserved"] > default["reserved"] + 0.5 * graphs["pool"], "the pool stays reserved between steps"
assert graphs["pool"] > 0.9 * default["saved"], "it holds at least what the forward saves for the backward"


# --8<-- [start:budget-sweep]
BUDGETS = [1.0, 0.5, 0.25]  # 1.0 is the default: save whatever the min-cut partitioner chooses
sweep = {1.0: rows["BERT-base", "compiled"]}
for budget in BUDGETS[1:]:
    with torch._functorch.config.patch(activation_memory_budget=budget):
        sweep[budget] = measured("BERT-base", mode="default")
print(f"{'budget':>6} {'saved GiB':>10} {'forward+backward peak GiB':>26} {'step ms (20th-80th)':>22}")
for budget in BUDGETS:
    r, ms = sweep[budget], sweep[budget]["step_ms"]
    print(f"{budget:6.2f} {r['saved']:10.2f} {r['forward_backward_peak']:26.2f} "
          f"{ms['median']:8.1f} ({ms['p20']:.1f}-{ms['p80']:.1f})")  # fmt: skip
# --8<-- [end:budget-sweep]
saved = [sweep[budget]["saved"] for budget in BUDGETS]
assert all(later <= earlier + 0.02 for earlier, later in itertools.pairwise(saved)), "a lower budget saves no more"
assert saved[-1] < 0.5 * saved[0], "at a quarter of the budget, most of what the default saves is recomputed"
peaks = [sweep[budget]["forward_backward_peak"] for budget in BUDGETS]
times = [sweep[budget]["step_ms"]["median"] for budget in BUDGETS]
assert peaks[-1] < 0.75 * peaks[0] and times[-1] > 1.2 * times[0], "less memory, paid for in step time"

# --8<-- [start:plot-data]
points = [{"budget": b, "peak_gib": sweep[b]["forward_backward_peak"] + sweep[b]["held"], "ms": sweep[b]["step_ms"]}
          for b in BUDGETS]  # fmt: skip
print(json.dumps({"model": "BERT-base training step", "points": points}))
# --8<-- [end:plot-data]
