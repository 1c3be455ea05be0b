"""Which stage broke? Bisecting a torch.compile failure with backend="eager", "aot_eager" and "inductor".

Run it as it is: `python examples/aot-autograd/debugging.py`. Both bugs below are CPU bugs as much
as GPU ones, so the example stays on the CPU everywhere.
"""

import textwrap

import torch
import torch._inductor.decomposition
from torch._inductor.decomposition import register_decomposition

torch.manual_seed(0)
# Compile afresh every time: a cache hit from an earlier run could hide a decomposition you just edited.
torch._functorch.config.enable_autograd_cache = False
torch._inductor.config.fx_graph_cache = False


# --8<-- [start:bisect]
STAGES = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")


def bisect(fn, *args):
    """Run fn under each backend; return {backend: None if it matches eager, else what went wrong}."""
    expected = fn(*args)  # plain eager PyTorch, no torch.compile: the reference
    outcome = {}
    for backend in STAGES:
        torch._dynamo.reset()
        try:
            got = torch.compile(fn, backend=backend)(*args)
        except Exception as error:  # noqa: BLE001 - reporting the error is the point
            outcome[backend] = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
        else:
            same = got.shape == expected.shape and torch.allclose(got, expected)
            diff = (got - expected).abs().max().item() if got.shape == expected.shape else float("nan")
            outcome[backend] = None if same else f"wrong result, max |compiled - eager| = {diff:.3g}"
        print(f"{backend:>27}: {outcome[backend] or 'matches eager'}")
    return outcome


def first_failing(outcome):
    return next((backend for backend, problem in outcome.items() if problem), None)
# --8<-- [end:bisect]


# --8<-- [start:wrong-decomposition]
@torch.library.custom_op("docs_debug::softplus_clip", mutates_args=())
def softplus_clip(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(x).clamp(max=4.0)


@softplus_clip.register_fake
def _(x):
    return torch.empty_like(x)  # right, this time


@register_decomposition(torch.ops.docs_debug.softplus_clip.default)  # into Inductor's table
def _(x):
    return torch.log1p(torch.exp(x)).clamp(min=4.0)  # the bug: min instead of max


def head(x):
    return softplus_clip(x * 2) + 1


wrong_decomposition = bisect(head, torch.randn(10))
# --8<-- [end:wrong-decomposition]
assert first_failing(wrong_decomposition) == "aot_eager_decomp_partition", wrong_decomposition
assert wrong_decomposition["eager"] is None and wrong_decomposition["aot_eager"] is None
assert wrong_decomposition["inductor"].startswith("wrong result"), "no error anywhere: only a wrong answer"
assert wrong_decomposition["aot_eager_decomp_partition"] == wrong_decomposition["inductor"], "the same wrong answer"
assert hasattr(torch._inductor.decomposition.fast_random_decomps, "cache_info"), "Inductor's table is built once"


# --8<-- [start:wrong-fake]
@torch.library.custom_op("docs_debug::drop_ends", mutates_args=())
def drop_ends(x: torch.Tensor) -> torch.Tensor:
    return x[1:-1].clone()  # the real kernel: two elements shorter than x


@drop_ends.register_fake
def _(x):
    return torch.empty_like(x)  # the bug: the fake kernel says "same shape as x"


def positions(x):
    y = drop_ends(x)
    return y * torch.arange(y.shape[0])  # y.shape[0] is read while tracing, from the fake


wrong_fake = bisect(positions, torch.randn(10))
# --8<-- [end:wrong-fake]
assert first_failing(wrong_fake) == "eager", "Dynamo alone already breaks: the fake kernel is wrong"
assert all(wrong_fake[backend] for backend in STAGES), "and every later stage inherits the problem"
assert "(8)" in wrong_fake["eager"] and "(10)" in wrong_fake["eager"], "real size 8 against the fake's 10"

# --8<-- [start:opcheck]
try:
    torch.library.opcheck(drop_ends, (torch.randn(10),))
    opcheck_error = None
except Exception as error:  # noqa: BLE001
    opcheck_error = error
    print(type(error).__name__ + ":")
    print(textwrap.fill(str(error).splitlines()[0], width=100, initial_indent="  ", subsequent_indent="  "))
# --8<-- [end:opcheck]
assert type(opcheck_error).__name__ == "OpCheckError" and "test_faketensor" in str(opcheck_error)
