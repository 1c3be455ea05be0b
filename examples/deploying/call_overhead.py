"""What one compiled call costs besides its kernels: the guards, the wrappers' Python, the launches and
the GPU's work; what the guard-skipping settings remove and what they can get wrong; and a
recompile limit reached, with its fixes.

Run it as it is: `python examples/deploying/call_overhead.py` (on a GPU if torch sees one).
"""

import copy
import io
import logging
import statistics
from collections import Counter

import torch
from torch.profiler import ProfilerActivity, profile

import compile_tools
from benchmarking import _profile_diff
from deploying import _model

device = compile_tools.device()
cuda = device.type == "cuda"

# --8<-- [start:model]
torch.manual_seed(0)
block = _model.Block(256).to(device).eval().requires_grad_(False)  # the first-call page's block
x = torch.randn(128, 256, device=device)
compiled = torch.compile(block)
compiled(x)
# --8<-- [end:model]


# --8<-- [start:split]
def per_call_us(calls: int, options: dict | None = None) -> dict[str, float]:
    """Median host microseconds of each part of a call of `block` compiled with `options`, over
    `calls` calls under the profiler, and the GPU's busy time per call."""
    torch._dynamo.reset()  # a fresh compile: the guards of earlier compiles are not looked at
    fn = torch.compile(block, options=options or {})
    fn(x)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(calls):
            fn(x)
        if cuda:
            torch.cuda.synchronize()
    durations = {}  # part -> every event's microseconds
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            part = "GPU busy (its kernels)"
        elif event.name == "TorchDynamo Cache Lookup":
            part = "guards (TorchDynamo Cache Lookup)"
        elif event.name.startswith("Torch-Compiled Region"):
            part = "compiled region (Torch-Compiled Region)"
        elif event.name.startswith("## Call CompiledFxGraph"):
            part = "Inductor's call() (Call CompiledFxGraph)"
        elif "LaunchKernel" in event.name:  # cudaLaunchKernel, cuLaunchKernelEx, ...: the CUDA API's launches
            part = "kernel launches"
        else:
            continue
        durations.setdefault(part, []).append(event.time_range.elapsed_us())
    summed = {"GPU busy (its kernels)", "kernel launches"}  # several per call: their total per call
    return {
        part: sum(times) / calls if part in summed else statistics.median(times) for part, times in durations.items()
    }


WRAPPERS = {"Python call()": {}, "C++ call()": {"cpp_wrapper": True}}  # the one change: the wrapper's language
parts = {wrapper: per_call_us(200, options) for wrapper, options in WRAPPERS.items()}
print(f"{'median us per call, under the profiler':44}" + "".join(f"{wrapper:>14}" for wrapper in WRAPPERS))
for part in parts["Python call()"]:
    print(f"{part:44}" + "".join(f"{parts[wrapper][part]:14.1f}" for wrapper in WRAPPERS))
timings = {}  # each wrapper against eager, timed without the profiler in pairs of blocks of calls
for wrapper, options in WRAPPERS.items():
    torch._dynamo.reset()
    fn = torch.compile(block, options=options)
    timings[wrapper] = _profile_diff.compare(lambda: block(x), lambda fn=fn: fn(x))
for name, side in [("eager", timings["Python call()"]["eager"])] + [(w, t["compiled"]) for w, t in timings.items()]:
    gpu = f", GPU busy {side['busy_ms'] * 1e3:5.1f} us, {side['launches']} launches: {side['bound']}" if cuda else ""
    print(f"{name:14} wall {side['ms'] * 1e3:6.1f} us per call, host {side['host_ms'] * 1e3:6.1f} us{gpu}")
for wrapper, timing in timings.items():
    low, high = timing["speedup_range"]
    print(
        f"{wrapper} against eager: {timing['speedup']:.2f}x (10th to 90th percentile of pairs {low:.2f} to {high:.2f})"
    )
# --8<-- [end:split]
python, cpp = parts["Python call()"], parts["C++ call()"]
CALL = "Inductor's call() (Call CompiledFxGraph)"
assert python[CALL] < python["compiled region (Torch-Compiled Region)"], "Inductor's call() runs inside the region"
if cuda:
    assert 0 < python["kernel launches"] < python[CALL], "the launches are part of Inductor's call()"
    assert timings["Python call()"]["compiled"]["bound"] == "launch-bound", "this small block waits on the host"
    assert cpp[CALL] < python[CALL], "in C++, the wrapper's own work shrinks"
    python_speedup, cpp_speedup = (timings[wrapper]["speedup"] for wrapper in WRAPPERS)
    assert cpp_speedup > 1.1 * python_speedup, "against eager, the C++ wrapper gains more than a tenth"

# --8<-- [start:guard-settings]
SETTINGS = {  # guard_filter_fn: given every guard Dynamo built, it returns which ones to keep
    "every guard (the default)": None,
    "skip_guard_on_inbuilt_nn_modules_unsafe": torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe,
    "skip_guard_on_all_nn_modules_unsafe": torch.compiler.skip_guard_on_all_nn_modules_unsafe,
    "skip_guard_on_globals_unsafe": torch.compiler.skip_guard_on_globals_unsafe,
    "keep_tensor_guards_unsafe": torch.compiler.keep_tensor_guards_unsafe,
    "skip_all_guards_unsafe": torch.compiler.skip_all_guards_unsafe,
}
kept = {}  # setting -> (guards kept, guards built, types of the guards kept)


def counting(setting: str, keep):
    """The setting's filter, which also records how many guards it kept."""

    def guard_filter(entries):
        flags = keep(entries) if keep else [True] * len(entries)
        kinds = Counter(entry.guard_type for entry, kept_it in zip(entries, flags, strict=True) if kept_it)
        kept[setting] = sum(flags), len(entries), kinds
        return flags

    return guard_filter


lookup_us = {setting: [] for setting in SETTINGS}  # rounds over the settings: the host's speed drifts
for _ in range(3):
    for setting, keep in SETTINGS.items():
        parts = per_call_us(200, {"guard_filter_fn": counting(setting, keep)})
        lookup_us[setting].append(parts.get("guards (TorchDynamo Cache Lookup)"))  # None: no lookup ran
print(f"{'guard_filter_fn':42} {'guards kept':>12} {'lookup, us, 3 rounds':>22}")
for setting, (kept_guards, built, _) in kept.items():
    rounds = " / ".join("none" if us is None else f"{us:.1f}" for us in lookup_us[setting])
    print(f"{setting:42} {kept_guards:5} of {built:<4} {rounds:>22}")
print("kinds of the default's guards:", dict(kept["every guard (the default)"][2].most_common()))
# --8<-- [end:guard-settings]
assert kept["skip_all_guards_unsafe"][0] == 0 and kept["keep_tensor_guards_unsafe"][2].keys() == {"TENSOR_MATCH"}
built = kept["every guard (the default)"][0]
assert all(kept[s][0] < built for s in SETTINGS if s != "every guard (the default)"), "each setting drops some"
default_lookup = statistics.median(lookup_us["every guard (the default)"])
for setting in ("keep_tensor_guards_unsafe", "skip_all_guards_unsafe"):  # torch 2.13 skips a lookup with no guard
    rounds = [0.0 if us is None else us for us in lookup_us[setting]]
    assert statistics.median(rounds) < 0.5 * default_lookup, f"{setting}: fewer guards, less time"


# --8<-- [start:wrong-answers]
class ScaledBlock(torch.nn.Module):
    """A block and a plain Python attribute, which a training script might change between calls."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.block, self.scale = inner, 1.0

    def forward(self, inputs):
        return self.block(inputs) * self.scale


SCALE = 1.0  # a module-level setting


def scaled_by_global(inputs):
    return block(inputs) * SCALE


def doubled_gelu(inputs):  # no parameters: any dtype of input is valid
    return torch.nn.functional.gelu(inputs) * 2


def a_global_changes():
    def change():
        global SCALE
        SCALE = 2.0
        return x

    return scaled_by_global, change


def an_attribute_of_layernorm_changes():
    model = ScaledBlock(copy.deepcopy(block))

    def change():
        model.block.norm.eps = 1.0  # torch.nn.LayerNorm is a built-in module
        return x

    return model, change


def an_attribute_of_the_model_changes():
    model = ScaledBlock(copy.deepcopy(block))

    def change():
        model.scale = 2.0  # ScaledBlock is the model's own module class
        return x

    return model, change


def the_input_dtype_changes():
    return doubled_gelu, lambda: x.double()  # the same values, in float64


CASES = {  # setting -> a function to compile, and the change made after its first call
    "skip_guard_on_globals_unsafe": a_global_changes,
    "skip_guard_on_inbuilt_nn_modules_unsafe": an_attribute_of_layernorm_changes,
    "skip_guard_on_all_nn_modules_unsafe": an_attribute_of_the_model_changes,
    "skip_all_guards_unsafe": the_input_dtype_changes,
}
largest_error = {}  # (setting, every guard kept?) -> largest difference from eager after the change
for setting, case in CASES.items():
    for keep in (SETTINGS[setting], None):  # the unsafe setting, then every guard, on the same change
        torch._dynamo.reset()
        SCALE = 1.0
        function, change = case()
        fn = torch.compile(function, options={"guard_filter_fn": keep} if keep else {})
        fn(x)
        inputs = change()
        error = (fn(inputs).double() - function(inputs).double()).abs().max().item()
        largest_error[setting, keep is None] = error
        print(f"{case.__name__.replace('_', ' '):34} {setting if keep else 'every guard':40} error {error:.3g}")
SCALE = 1.0
# --8<-- [end:wrong-answers]
for setting in CASES:
    assert largest_error[setting, False] > 0.1, f"{setting}: the change is not seen, the answer is wrong"
    assert largest_error[setting, True] < 1e-3, "with every guard, the same change recompiles: the answer is right"


# --8<-- [start:recompile-limit]
def batch_sizes():
    return [8 * n for n in range(1, 13)]  # twelve request sizes, as a server might see them


dynamo_log = io.StringIO()
handler = logging.StreamHandler(dynamo_log)
logging.getLogger("torch._dynamo").addHandler(handler)


def graphs_compiled(compile_options: dict, prepare) -> tuple[int, int]:
    """Graphs Dynamo compiled for the block over twelve batch sizes, and how many of the twelve sizes
    then run compiled code (the profiler sees a "Torch-Compiled Region"; a call that runs eagerly has none)."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    fn = torch.compile(block, **compile_options)
    batches = [prepare(torch.randn(rows, 256, device=device)) for rows in batch_sizes()]
    for batch in batches:
        fn(batch)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches:
            fn(batch)
    compiled_calls = sum(event.name.startswith("Torch-Compiled Region") for event in prof.events())
    return torch._dynamo.utils.counters["stats"]["unique_graphs"], compiled_calls


def marked_dynamic(t):
    torch._dynamo.mark_dynamic(t, 0)  # dimension 0 may take any size: compile it as a symbol
    return t


def padded(t):  # pad the batch to a multiple of 32 rows; a caller drops the padding's rows
    return torch.nn.functional.pad(t, (0, 0, 0, -t.shape[0] % 32))


def unchanged(t):
    return t


fixes = {  # label -> (torch.compile's arguments, what the caller does to each batch, the recompile limit)
    "dynamic=False": ({"dynamic": False}, unchanged, 8),  # 8 is the default limit
    "dynamic=False, recompile_limit=16": ({"dynamic": False}, unchanged, 16),
    "dynamic=False, mark_dynamic(x, 0)": ({"dynamic": False}, marked_dynamic, 8),
    "dynamic=False, batch padded to a multiple of 32": ({"dynamic": False}, padded, 8),
    "the default, dynamic=None": ({}, unchanged, 8),
}
outcomes = {}
for label, (options, prepare, limit) in fixes.items():
    with torch._dynamo.config.patch(recompile_limit=limit):
        outcomes[label] = graphs_compiled(options, prepare)
    graphs, compiled_calls = outcomes[label]
    print(f"{label:48} {graphs:3} graphs; {compiled_calls:2} of 12 sizes run compiled")
print("what dynamic=False logged:")
for line in dynamo_log.getvalue().splitlines():
    if "recompile_limit" in line or "last reason" in line:
        print("   ", line.strip())
logging.getLogger("torch._dynamo").removeHandler(handler)
# --8<-- [end:recompile-limit]
assert outcomes["dynamic=False"] == (8, 8), "one graph per batch size up to the limit of 8; the other 4 run eagerly"
assert outcomes["dynamic=False, recompile_limit=16"] == (12, 12), "a higher limit: one graph per size"
assert outcomes["dynamic=False, mark_dynamic(x, 0)"] == (1, 12), "one graph for every size"
assert outcomes["dynamic=False, batch padded to a multiple of 32"] == (3, 12), "one graph per padded size"
assert outcomes["the default, dynamic=None"] == (2, 12), "static first, then one dynamic graph"
