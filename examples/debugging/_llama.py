"""The real model of the Debugging chapter: a small Llama from transformers, and its files' short names.

Import it from an example of this chapter: `from debugging._llama import small_llama, tokens, in_package`.
The model is built from a config with random weights, so nothing is downloaded.
"""

import re

import torch
from transformers import LlamaConfig, LlamaForCausalLM

# A path into the installed transformers package, up to the package's own folder: dropped
INSTALLED = re.compile(r"^.*?/(?=transformers/)")


# --8<-- [start:model]
def small_llama(attention: str = "sdpa") -> LlamaForCausalLM:
    """Two decoder layers, 64 wide; `attention` is transformers' attention implementation."""
    config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, attn_implementation=attention)  # fmt: skip
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def tokens(length: int) -> torch.Tensor:
    """A batch of 2 sequences of `length` random token ids."""
    return torch.randint(0, 1000, (2, length), generator=torch.Generator().manual_seed(length))


# --8<-- [end:model]


def in_package(path: str) -> str:
    """A file of transformers as `transformers/...`, wherever the package is installed."""
    return INSTALLED.sub("", path)
