"""One setting changed on the GPU: BERT's compiled model with AOTAutograd's backward_pass_autocast at its
default and "off", forward and backward only. With "off" the backward's attention products run in fp32,
as under compiled autograd, and the fp32 products' GPU time should grow as it does in the whole step.

Run it as it is: `python examples/benchmarking/whole_step_autocast.py`. It needs a GPU.
"""
# execdocs: devices=cuda

import torch
import torch._functorch.config

import compile_tools
from benchmarking import _profile_diff, _whole_step, _zoo

device = compile_tools.device()
LAYERS = 4  # BERT-base's layers, four of them: the products' dtypes do not depend on the depth
model = _zoo.build("BERT-base", device, num_hidden_layers=LAYERS).train()
inputs = _zoo.input_maker("BERT-base", model, device, train=True)()


def forward_and_backward(module):
    _whole_step.backward(module, inputs)
    model.zero_grad(set_to_none=True)


# --8<-- [start:setting]
categories = {}
for setting in ("same_as_forward", "off"):
    torch._dynamo.reset()
    with torch._functorch.config.patch(backward_pass_autocast=setting):  # read when AOTAutograd traces
        compiled = torch.compile(model)
        forward_and_backward(compiled)
        categories[setting] = _profile_diff.profile_step(lambda: forward_and_backward(compiled)).by_category()

print(f"BERT-base with {LAYERS} layers, compiled, forward and backward: GPU ms per step by category")
print(f"{'':<34}" + "".join(f"{setting!r:>20}" for setting in categories))
for category in sorted({c for by in categories.values() for c in by}, key=lambda c: -categories["off"].get(c, 0.0)):
    print(f"{category:<34}" + "".join(f"{by.get(category, 0.0):>20.2f}" for by in categories.values()))
print(f"{'all':<34}" + "".join(f"{sum(by.values()):>20.2f}" for by in categories.values()))
# --8<-- [end:setting]

fp32 = {setting: by.get("GEMM/conv (fp32)", 0.0) for setting, by in categories.items()}
assert fp32["off"] > 2 * fp32["same_as_forward"], fp32  # the whole step's fp32 products, without compiled autograd
