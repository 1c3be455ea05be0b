"""Guards: what Dynamo checks before it reuses a compiled graph, and the recompiles when a check fails.

Run it as it is: `python examples/dynamo/guards.py`. Guards work the same way on every device, so
this example stays on the CPU, and its backend, compile_tools.GraphRecorder, only keeps the graphs
and runs them as they are: Inductor would add compile time and nothing to the point.
"""

import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

import compile_tools


# --8<-- [start:function]
SCALE = 0.5  # a module-level float


class Settings:
    def __init__(self):
        self.use_bias = True


settings = Settings()  # a global configuration object


def scaled_relu(x, bias, steps):
    y = x * SCALE
    if settings.use_bias:
        y = y + bias
    for _ in range(steps):  # steps is a Python int
        y = torch.relu(y) - 0.1
    return y


recorder = compile_tools.GraphRecorder()  # a backend that keeps each graph it gets and runs it as it is
compiled = torch.compile(scaled_relu, backend=recorder)
x, bias = torch.randn(8, 4), torch.randn(4)
# --8<-- [end:function]

# --8<-- [start:guards]
with compile_tools.captured_logs(guards=True) as log:
    compiled(x, bias, 2)
guard_log = log.getvalue()
compile_tools.print_lines(
    guard_log,
    keep=lambda line: "DIMENSION_DYNAMIC_MARKING_GUARD" not in line and "latency" not in line,
    why_cut="the DIMENSION_DYNAMIC_MARKING_GUARD lines (no dimension was marked dynamic by hand), "
    "and the time one guard check took",
)
# --8<-- [end:guards]
assert len(recorder.graphs) == 1
for kind in ("TENSOR_MATCH", "EQUALS_MATCH", "ID_MATCH", "TYPE_MATCH", "GLOBAL_STATE"):
    assert kind in guard_log, kind
for source in ("L['x']", "L['bias']", "L['steps']", "G['SCALE']", "G['settings']", "G['torch'].relu"):
    assert source in guard_log, source

# --8<-- [start:check-guards]
(entry,) = _debug_get_cache_entry_list(scaled_relu)
guard = entry.guard_manager
first_call = dict(x=x, bias=bias, steps=2)


def check(what, **changes):
    result = guard.check_verbose(dict(first_call, **changes))
    reason = "" if result.result else result.verbose_code_parts[0].split("  #")[0].strip()
    print(f"{what:30} {'pass' if result.result else 'FAIL':5} {reason}".rstrip())
    return bool(result.result)


outcomes = [
    check("the same arguments"),
    check("other values, same metadata", x=torch.randn(8, 4), bias=torch.randn(4)),
    check("float64 x", x=x.double()),
    check("x that requires grad", x=x.clone().requires_grad_()),
    check("x with 16 rows", x=torch.randn(16, 4)),
    check("x transposed (other strides)", x=torch.randn(4, 8).t()),
    check("steps=3", steps=3),
]
SCALE = 0.25
outcomes.append(check("global SCALE = 0.25"))
SCALE = 0.5
settings.use_bias = False
outcomes.append(check("settings.use_bias = False"))
settings.use_bias = True
relu = torch.relu
torch.relu = lambda t: t.clamp(min=0)  # the same function, but another object
outcomes.append(check("torch.relu replaced"))
torch.relu = relu
# --8<-- [end:check-guards]
assert outcomes == [True, True] + [False] * 8, outcomes
assert len(recorder.graphs) == 1, "checking guards compiles nothing"


# --8<-- [start:recompiles]
recompiled = []


def call(what, *args):
    before = len(recorder.graphs)
    compiled(*args)
    recompiled.append(len(recorder.graphs) > before)
    print(f"{what:34} graphs compiled so far: {len(recorder.graphs)}{'  <- recompiled' if recompiled[-1] else ''}")


with compile_tools.captured_logs(recompiles=True) as log:
    call("the same arguments again", x, bias, 2)
    call("float64 tensors", x.double(), bias.double(), 2)
    SCALE = 0.25
    call("global SCALE = 0.25", x, bias, 2)
    SCALE = 0.5
    settings.use_bias = False
    call("settings.use_bias = False", x, bias, 2)
    settings.use_bias = True
    call("steps=3", x, bias, 3)
    with torch.no_grad():
        call("under torch.no_grad()", x, bias, 2)
recompile_log = log.getvalue()
print()
compile_tools.print_lines(
    recompile_log,
    keep=lambda line: "Recompiling function" in line or "0/0:" in line,
    why_cut="how the other cache entries failed, and user stack traces",
)
print()
print("the recompile for steps=3, every cache entry's first failed guard, in the order logged:")
steps_recompile = recompile_log.split("Recompiling function")[4]
entry_reasons = [
    line.split("  #")[0].rstrip() for line in steps_recompile.splitlines() if line.lstrip().startswith("- 0/")
]
print("\n".join(entry_reasons))
# --8<-- [end:recompiles]
logged_ids = [int(line.split("0/")[1].split(":")[0]) for line in entry_reasons]
assert logged_ids == [3, 2, 1, 0], f"one reason per existing entry, newest first: {logged_ids}"
assert recompiled == [False, True, True, True, True, True], "each change recompiled, the repeated call did not"
assert len(recorder.graphs) == 6, "five recompiles after the first compile"
assert recompile_log.count("Recompiling function") == 5
assert len(_debug_get_cache_entry_list(scaled_relu)) == 6, "one cache entry per compile"

# --8<-- [start:shape-guards]
with compile_tools.captured_logs(guards=True, recompiles=True) as log:
    call("x with 16 rows", torch.randn(16, 4), bias, 2)
    call("x with 32 rows", torch.randn(32, 4), bias, 2)
    call("the first arguments again", x, bias, 2)
shape_log = log.getvalue()
print()
compile_tools.print_lines(
    shape_log,
    keep=lambda line: (
        "0/0:" in line
        or ("TENSOR_MATCH" in line and "L['x']" in line)
        or ("L['x'].size()" in line and "if not" not in line)
    ),
    why_cut="the other guards of the new entry, which did not change, and the other recompile reasons",
)
print()
for what, rows, cols in (("64 rows", 64, 4), ("1 row", 1, 4), ("16 rows, 5 columns", 16, 5)):
    takers = [
        str(entry.compile_id)
        for entry in _debug_get_cache_entry_list(scaled_relu)
        if entry.guard_manager.check(dict(first_call, x=torch.randn(rows, cols)))
    ]
    print(f"x with {what:20} accepted by cache entries: {', '.join(takers) or 'none'}")
# --8<-- [end:shape-guards]
assert recompiled[-3:] == [True, False, False], "16 rows recompiled; 32 rows and the first arguments did not"
assert len(recorder.graphs) == 7 and torch._dynamo.config.automatic_dynamic_shapes
assert shape_log.count("Recompiling function") == 1
entries = [entry.guard_manager for entry in _debug_get_cache_entry_list(scaled_relu)]
accepting_64_rows = [guard for guard in entries if guard.check(dict(first_call, x=torch.randn(64, 4)))]
assert len(accepting_64_rows) == 1, "exactly one entry, the new one, takes any number of rows from 2 up"
dynamic_entry = accepting_64_rows[0]
assert not dynamic_entry.check(dict(first_call, x=torch.randn(1, 4))), "but not 1: sizes 0 and 1 stay specialized"
assert not dynamic_entry.check(dict(first_call, x=torch.randn(16, 5))), "the second dimension is still static"


# --8<-- [start:recompile-limit]
def activate(x, name):
    return getattr(torch, name)(x) * 2


activate_recorder = compile_tools.GraphRecorder()  # .runs counts the calls that ran a compiled graph
compiled_activate = torch.compile(activate, backend=activate_recorder)
ran_compiled = {}
with torch._dynamo.config.patch(recompile_limit=2), compile_tools.captured_logs(recompiles=True) as log:
    for name in ("relu", "tanh", "sigmoid", "exp", "relu", "tanh", "sigmoid"):
        before = activate_recorder.runs
        result = compiled_activate(x, name)
        torch.testing.assert_close(result, activate(x, name))
        ran_compiled.setdefault(name, []).append(activate_recorder.runs > before)
        how = "a compiled graph" if activate_recorder.runs > before else "eagerly, as plain Python"
        print(f"{name:8} graphs compiled: {len(activate_recorder.graphs)}   ran {how}")
limit_log = log.getvalue()
print()
compile_tools.print_lines(
    limit_log,
    keep=lambda line: "hit config" in line or line.lstrip().startswith(("function:", "last reason:")),
    why_cut="the two recompile reasons before it, stack traces and hints",
)
print("recompile_limit after the with block:", torch._dynamo.config.recompile_limit)
# --8<-- [end:recompile-limit]
assert len(activate_recorder.graphs) == 2, "the first compile and one recompile, then the limit"
assert ran_compiled == {"relu": [True, True], "tanh": [True, True], "sigmoid": [False, False], "exp": [False]}
assert "_limit" in limit_log and limit_log.count("hit config") == 1, "one warning, when the limit was hit"
assert torch._dynamo.config.recompile_limit == 8, "config.patch put the default back"


# --8<-- [start:fail-on-limit]
def activate_strictly(x, name):
    return getattr(torch, name)(x) * 2


strict = torch.compile(activate_strictly, backend="eager")
with torch._dynamo.config.patch(recompile_limit=1, fail_on_recompile_limit_hit=True):
    strict(x, "relu")
    try:
        strict(x, "tanh")
        error = None
    except Exception as raised:  # noqa: BLE001 - we want to show whatever torch raises
        error = raised
print(f"{type(error).__name__}: {str(error).splitlines()[0]}")
# --8<-- [end:fail-on-limit]
assert error is not None and "Limit" in type(error).__name__, repr(error)
