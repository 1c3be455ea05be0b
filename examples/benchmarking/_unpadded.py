"""An attention mask function for transformers that builds no mask when the batch has no padding.

While Dynamo traces, transformers cannot look at the values of a padding mask, so it always builds
a boolean mask of shape (batch, 1, query, key), even when there is no padding at all; eager mode
skips it. With a mask, SDPA's fused kernels give way to its math backend in the compiled graph.
Registering this function under a new attention name keeps the mask away, for batches that are
known to have no padding (as every batch of the zoo): `model.set_attn_implementation("sdpa_unpadded")`.
"""

from transformers import AttentionInterface, AttentionMaskInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

# --8<-- [start:register]
AttentionInterface.register("sdpa_unpadded", ALL_ATTENTION_FUNCTIONS["sdpa"])  # the same SDPA attention...
AttentionMaskInterface.register("sdpa_unpadded", lambda *args, **kwargs: None)  # ...with no mask built
# --8<-- [end:register]
