"""The model zoo of the benchmarking chapter: real architectures from transformers, random weights.

Every model is built from its configuration class, so nothing is downloaded. The default
configuration of each class is the model the table names (BertConfig() is BERT-base, ResNetConfig()
is ResNet-50, SwinConfig() is Swin-T, ...); only the Llama model is made smaller than any published
one. Only arguments that exist in transformers 4.4x and 5.x are used.
"""

import torch
import transformers

# --8<-- [start:zoo]
TEXT, LM, SEQ2SEQ, IMAGE = "text", "lm", "seq2seq", "image"
TOKENS = {"batch": 16, "seq": 512}  # 16 sequences of 512 tokens
IMAGES = {"batch": 32, "size": 224}  # 32 RGB images of 224 x 224
# Llama's architecture (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention), made small
LLAMA_SMALL = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                   num_key_value_heads=8, max_position_embeddings=2048)  # fmt: skip

ZOO = {
    # name: (model class, config class, config arguments, kind of input)
    "BERT-base": ("BertModel", "BertConfig", {}, TEXT),
    "DistilBERT": ("DistilBertModel", "DistilBertConfig", {}, TEXT),
    "GPT-2": ("GPT2LMHeadModel", "GPT2Config", {}, LM),
    "T5-small": ("T5ForConditionalGeneration", "T5Config", {"decoder_start_token_id": 0}, SEQ2SEQ),  # as t5-small
    "Llama-4L-1024": ("LlamaForCausalLM", "LlamaConfig", LLAMA_SMALL, LM),
    "ViT-B/16": ("ViTModel", "ViTConfig", {}, IMAGE),
    "ResNet-50": ("ResNetModel", "ResNetConfig", {}, IMAGE),
    "ConvNeXt-T": ("ConvNextModel", "ConvNextConfig", {}, IMAGE),
    "Swin-T": ("SwinModel", "SwinConfig", {}, IMAGE),
    "MobileNetV2": ("MobileNetV2Model", "MobileNetV2Config", {}, IMAGE),
}
# --8<-- [end:zoo]


def build(name: str, device: torch.device, **config_overrides) -> torch.nn.Module:
    """The model `name` with random weights, in float32 on `device` (autocast makes it bf16 later)."""
    model_class, config_class, config_kwargs, _ = ZOO[name]
    config = getattr(transformers, config_class)(**{**config_kwargs, **config_overrides})
    torch.manual_seed(0)
    return getattr(transformers, model_class)(config).to(device=device, dtype=torch.float32)


def input_maker(name: str, model, device: torch.device, *, train: bool, batch=None, seq=None, size=None):
    """A function returning the keyword arguments of one batch: random tokens or random images.

    For training, the language models get labels, so they return their own cross-entropy loss.
    """
    kind = ZOO[name][3]
    config = model.config
    batch = batch or (IMAGES if kind == IMAGE else TOKENS)["batch"]
    seq, size = seq or TOKENS["seq"], size or IMAGES["size"]

    def make_inputs():
        generator = torch.Generator(device="cpu").manual_seed(0)
        if kind == IMAGE:
            return {"pixel_values": torch.randn(batch, 3, size, size, generator=generator).to(device)}
        tokens = torch.randint(0, config.vocab_size, (batch, seq), generator=generator).to(device)
        if kind == TEXT:
            return {"input_ids": tokens}
        if kind == LM:
            return {"input_ids": tokens, "labels": tokens} if train else {"input_ids": tokens}
        targets = tokens[:, : seq // 4].contiguous()  # SEQ2SEQ: a target a quarter as long as the source
        if train:
            return {"input_ids": tokens, "labels": targets}
        return {"input_ids": tokens, "decoder_input_ids": targets}

    return make_inputs


def attention_implementation(model: torch.nn.Module) -> str:
    """Which attention transformers chose ("sdpa" when the model supports it, else "eager"); "-" without attention."""
    if not any("Attention" in type(module).__name__ for module in model.modules()):
        return "-"
    return getattr(model.config, "_attn_implementation", None) or "-"
