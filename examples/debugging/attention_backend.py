"""Which SDPA backend ran, and why: the kernels one attention call launched, each fused backend's own
verdict on that call's inputs, and the mask that transformers builds while Dynamo traces BERT.

Run it as it is: `python examples/debugging/attention_backend.py`. It needs a GPU.
"""
# execdocs: devices=cuda

import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import AttentionInterface, AttentionMaskInterface, masking_utils
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

import compile_tools
from benchmarking import _profile_diff, _zoo

device = compile_tools.device()

# --8<-- [start:record]
calls = []  # what each of BERT's attention layers passed to SDPA: query, key, value, mask, scale


def recording_sdpa(module, query, key, value, attention_mask, **kwargs):
    calls.append((query, key, value, attention_mask, kwargs.get("scaling")))
    return ALL_ATTENTION_FUNCTIONS["sdpa"](module, query, key, value, attention_mask, **kwargs)


AttentionInterface.register("sdpa_recorded", recording_sdpa)  # SDPA, recording its inputs,
AttentionMaskInterface.register("sdpa_recorded", masking_utils.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])  # same mask
model = _zoo.build("BERT-base", device).eval()
model.set_attn_implementation("sdpa_recorded")
inputs = _zoo.input_maker("BERT-base", model, device, train=False)()  # 16 x 512 tokens, no padding


def first_layer_inputs(tracing: bool) -> tuple:
    """The first attention call's inputs in eager BERT (bf16 autocast), with transformers' question
    "am I being traced?" answered as it is in eager mode, or as it is while Dynamo traces."""
    calls.clear()
    answer = masking_utils.is_tracing
    masking_utils.is_tracing = lambda *args: tracing
    try:
        _profile_diff.inference_step(model, inputs)()
    finally:
        masking_utils.is_tracing = answer
    return calls[0]


cases = {"eager": first_layer_inputs(tracing=False), "as Dynamo traces it": first_layer_inputs(tracing=True)}
for name, (query, _, _, mask, _) in cases.items():
    shown = "None" if mask is None else f"{mask.dtype} {tuple(mask.shape)}, strides {mask.stride()}"
    print(f"{name:20} query {query.dtype} {tuple(query.shape)}, strides {query.stride()}; mask {shown}")
# --8<-- [end:record]
traced_mask = cases["as Dynamo traces it"][3]
# --8<-- [start:one-change]
query, key, value, mask, scale = cases["as Dynamo traces it"]
cases["same mask, contiguous"] = (query, key, value, mask.contiguous(), scale)  # the values, laid out in full
# --8<-- [end:one-change]
assert cases["eager"][3] is None, "eager BERT on a batch with no padding builds no mask"
assert traced_mask is not None and traced_mask.dtype == torch.bool, "under tracing, a boolean mask"


# --8<-- [start:which-ran]
def attention_kernels(query, key, value, mask, scale) -> list[str]:
    """The attention backends whose kernels one SDPA call launched, as the profiler names them."""

    def call():
        with torch.no_grad():
            return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scale)

    return sorted(category for category in _profile_diff.profile_step(call).by_category() if "attention" in category)


ran = {name: attention_kernels(*inputs_) for name, inputs_ in cases.items()}
for name, backends in ran.items():
    print(f"{name:20} ran: {', '.join(backends) or 'no attention kernel'}")
# --8<-- [end:which-ran]
assert ran["eager"] and not any("math" in backend for backend in ran["eager"]), "without a mask, a fused kernel"


# --8<-- [start:why]
BACKENDS = {
    "flash": (SDPBackend.FLASH_ATTENTION, torch.backends.cuda.can_use_flash_attention),
    "memory-efficient": (SDPBackend.EFFICIENT_ATTENTION, torch.backends.cuda.can_use_efficient_attention),
    "cuDNN": (SDPBackend.CUDNN_ATTENTION, torch.backends.cuda.can_use_cudnn_attention),
}


NOT_A_REASON = ("kernel not used because:", "has been runtime disabled", "No available kernel")


def verdicts(query, key, value, mask, scale) -> dict[str, str]:
    """Each fused backend's answer for these inputs; where it is no, the reasons SDPA gives when that
    backend alone is allowed (sdpa_kernel) and the call has to refuse."""
    params = torch.backends.cuda.SDPAParams(query, key, value, mask, 0.0, False, False)
    found = {}
    for name, (backend, check) in BACKENDS.items():
        if check(params, False):
            found[name] = "yes"
            continue
        with warnings.catch_warnings(record=True) as caught, sdpa_kernel(backend), torch.no_grad():
            warnings.simplefilter("always")
            try:
                F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scale)
            except RuntimeError as refusal:
                caught.append(warnings.WarningMessage(str(refusal), RuntimeWarning, "", 0))
        reasons = [" ".join(str(warning.message).split("(Triggered internally")[0].split()) for warning in caught]
        # SDPA explains every backend it passed over; the others were switched off by sdpa_kernel
        reasons = [reason for reason in reasons if not any(part in reason for part in NOT_A_REASON)]
        found[name] = "no: " + " / ".join(dict.fromkeys(reasons))
    return found


answers = {name: verdicts(*inputs_) for name, inputs_ in cases.items()}
for name, found in answers.items():
    print(name)
    for backend, answer in found.items():
        print(f"  {backend:17} {answer}")
# --8<-- [end:why]
assert answers["as Dynamo traces it"]["flash"].startswith("no"), "flash attention takes no arbitrary mask"
assert "Attn_mask.stride(-1): 0" in answers["as Dynamo traces it"]["memory-efficient"], "refused for its layout"
assert not any("math" in backend for backend in ran["same mask, contiguous"]), "laid out in full, it runs fused"
for name, backends in ran.items():
    fused = {label for label in BACKENDS if f"attention ({label})" in backends}
    assert all(answers[name][label] == "yes" for label in fused), f"{name}: a kernel ran that its check refused"


# --8<-- [start:compiled]
aten_graphs = []


def keep_aten_graph(graph_module, example_inputs):
    """A backend that keeps the ATen graph AOTAutograd hands to a compiler, and runs it as it is."""
    from torch._functorch.aot_autograd import aot_module_simplified

    def keep(aten_graph, _):
        aten_graphs.append(aten_graph)
        return aten_graph.forward

    return aot_module_simplified(graph_module, example_inputs, fw_compiler=keep)


plain = _zoo.build("BERT-base", device).eval()  # transformers' own SDPA attention
_profile_diff.inference_step(torch.compile(plain, backend=keep_aten_graph), inputs)()
targets = [str(node.target) for graph in aten_graphs for node in graph.graph.nodes if node.op == "call_function"]
attention_ops = sorted({target for target in targets if "attention" in target})
print(f"the ATen graph the compiler gets: {len(aten_graphs)} graph(s), {len(targets)} ops")
print(f"  attention ops: {', '.join(attention_ops) or 'none'}")
print(f"  matrix products (bmm): {targets.count('aten.bmm.default')}, softmax: "
      f"{sum('softmax' in target for target in targets)}")  # fmt: skip
# --8<-- [end:compiled]
masked_math = any("math" in backend for backend in ran["as Dynamo traces it"])
fused_in_graph = any(kind in op for op in attention_ops for kind in ("flash", "efficient", "cudnn"))
assert masked_math != fused_in_graph, "the compiled graph chose as eager SDPA does with the same mask"
