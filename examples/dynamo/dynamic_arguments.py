"""Dynamic arguments: mark_dynamic and maybe_mark_dynamic against automatic dynamic (compiles, compile seconds,
the cost of a call of a static and of a symbolic graph), and int and float arguments that change.

Run it as it is: `python examples/dynamo/dynamic_arguments.py`. It runs on the CPU: the compiles and the calls it
times go through Inductor's C++ backend; the int and float cases need only Dynamo and AOTAutograd.
"""
# execdocs: devices=cpu

import dis
import io
import logging
import re
import statistics
import time
import types
from unittest import mock

import torch
from torch._dynamo import utils as dynamo_utils
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.eval_frame import _debug_get_cache_entry_list, make_set_enable_dynamic
from torch._dynamo.testing import CompileCounterWithBackend
from torch._inductor import cpu_vec_isa
from torch._inductor.graph import GraphLowering
from torch._inductor.utils import fresh_cache

import compile_tools
from _dynamic_functions import add_positions, repeat, scale
from benchmarking import _profile_diff

torch.manual_seed(0)
started = time.perf_counter()


# --8<-- [start:function]
# Dynamo keeps the graphs it compiled on the code object of the function it was called on, so each setting
# below gets an entry point of its own: the same code inside, a cache of its own.
def automatic(x):
    return add_positions(x)


def marked(x):
    return add_positions(x)


def maybe_marked(x):
    return add_positions(x)


def inputs_of(graph_module):
    """The graph's inputs as Dynamo typed them, and the numbers the graph reads out of a tensor input (.item())."""
    described = []
    for node in graph_module.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and isinstance(value, torch.Tensor):
            dtype = str(value.dtype).replace("torch.float", "f")
            described.append(f"{node.name}: {dtype}{list(value.shape)}".replace("'", ""))
        elif node.op == "placeholder":
            described.append(f"{node.name}: Sym({value})")
        elif node.target == "item":
            described.append(f"({node.name} = {node.args[0].name}.item(): Sym({value}), a {type(value).__name__})")
    return ", ".join(described)


def is_symbolic(graph_module):
    return "Sym(" in inputs_of(graph_module)


def rows(n, width=16):
    return torch.randn(n, width)
# --8<-- [end:function]


# --8<-- [start:compiles]
def warm_up(x):
    return add_positions(x)


# The CPU's instruction-set tests run once per process and build their test programs into the cache they
# find: here the shared one, where an earlier run left them, and not the throwaway one below.
cpu_vec_isa.pick_vec_isa()
with fresh_cache():  # start the compiler once (workers, imports), so that no setting below pays for it
    warm_up_start = time.perf_counter()
    torch.compile(warm_up)(rows(4))
    print(f"warm-up compile (4 rows, in a cache of its own): {time.perf_counter() - warm_up_start:.1f} s")

sizes, rounds = (8, 16, 32, 64), 3
settings = {"automatic dynamic": (automatic, None), "mark_dynamic": (marked, torch._dynamo.mark_dynamic),
            "maybe_mark_dynamic": (maybe_marked, torch._dynamo.maybe_mark_dynamic)}
counters, compile_seconds = {name: [] for name in settings}, {name: [] for name in settings}
for _ in range(rounds):  # the settings in turn, so that a slow stretch of the machine falls on all of them
    for name, (entry_point, mark) in settings.items():
        torch._dynamo.reset()  # forget the round before: its graphs and which sizes changed
        counter = CompileCounterWithBackend("inductor")  # counts the graphs Dynamo hands to Inductor, keeps them
        compiled = torch.compile(entry_point, backend=counter)
        seconds = []
        with fresh_cache():  # an empty cache folder and in-memory caches: every compile is cold
            for n in sizes:
                x = rows(n)
                if mark is not None and n == sizes[0]:
                    mark(x, 0)  # only the first call's tensor is marked
                before, start = counter.frame_count, time.perf_counter()
                compiled(x)
                if counter.frame_count > before:
                    seconds.append(time.perf_counter() - start)
        counters[name].append(counter)
        compile_seconds[name].append(seconds)
fastest = {name: min(sum(seconds) for seconds in compile_seconds[name]) for name in settings}
for name in settings:
    per_round = ", ".join(" + ".join(f"{s:.2f}" for s in seconds) for seconds in compile_seconds[name])
    print(f"{name:19}: {counters[name][0].frame_count} compile(s) for rows {sizes}; "
          f"seconds in each of {rounds} rounds: {per_round}; fastest {fastest[name]:.2f} s")
    for graph in counters[name][0].graphs:
        print(f"{'':21}{'symbolic' if is_symbolic(graph) else 'static  '} graph: {inputs_of(graph)}")
print(f"automatic dynamic's fastest round against each mark's: "
      f"{fastest['automatic dynamic'] / fastest['mark_dynamic']:.2f}x mark_dynamic's, "
      f"{fastest['automatic dynamic'] / fastest['maybe_mark_dynamic']:.2f}x maybe_mark_dynamic's")
# --8<-- [end:compiles]
assert all([counter.frame_count for counter in counters[name]] == [count] * rounds
           for name, count in zip(settings, (2, 1, 1), strict=True)), "automatic compiles twice, the marks once"
assert [is_symbolic(graph) for graph in counters["automatic dynamic"][0].graphs] == [False, True], "static, symbolic"
assert is_symbolic(counters["mark_dynamic"][0].graphs[0]) and is_symbolic(counters["maybe_mark_dynamic"][0].graphs[0])
# Compile seconds move with the machine's load; a round can only be slowed by it, so compare the fastest rounds.
# The floor is low: another process compiling on the same cores slows some compiles more than others.
assert fastest["automatic dynamic"] > 1.1 * max(fastest["mark_dynamic"], fastest["maybe_mark_dynamic"])


# --8<-- [start:which-graph-runs]
class RunCounter:
    """A backend that keeps each graph and counts the calls each one ran (graph i in runs[i]), without compiling."""

    def __init__(self):
        self.graphs, self.runs = [], []

    def __call__(self, graph_module, example_inputs):
        index = len(self.graphs)
        self.graphs.append(graph_module)
        self.runs.append(0)

        def run(*args):
            self.runs[index] += 1
            return graph_module.forward(*args)

        return run


counter = RunCounter()
torch._dynamo.reset()
compiled = torch.compile(add_positions, backend=counter)
for n in (8, 16):
    compiled(rows(n))
ran_before = list(counter.runs)
compiled(rows(8))  # the size the static graph was compiled for
ran = [after - before for after, before in zip(counter.runs, ran_before, strict=True)]
print(f"automatic dynamic after 8 and 16 rows: {len(counter.graphs)} graphs, "
      f"{', '.join('symbolic' if is_symbolic(graph) else 'static' for graph in counter.graphs)}")
print(f"8 rows again: calls run by each graph {ran}")
order = [re.search(r"size=(\[.*?\])", next(part for part in entry.guard_manager.code_parts if "size=" in part))[1]
         for entry in _debug_get_cache_entry_list(add_positions.__code__)]
print(f"the cache entries in the order of Dynamo's list, by the sizes their guards check: {', '.join(order)}")
# --8<-- [end:which-graph-runs]
assert ran == [0, 1], "8 rows run the symbolic graph, not the static one compiled for them"


# --8<-- [start:maybe-mark]
def unroll_rows(x):
    total = x[0]
    for i in range(1, x.shape[0]):  # range() needs the number of rows as a number: the size is specialized
        total = total + i * x[i]
    return total


def no_mark(tensor, dim):  # automatic dynamic, for comparison
    pass


outcomes = {}
for mark in (no_mark, torch._dynamo.mark_dynamic, torch._dynamo.maybe_mark_dynamic):
    for fn in (unroll_rows, add_positions):
        torch._dynamo.reset()
        counter = RunCounter()
        compiled = torch.compile(fn, backend=counter)
        first = rows(8)
        mark(first, 0)
        try:
            for x in (first, rows(16), rows(32)):
                compiled(x)
            kinds = ", ".join(f"{inputs_of(graph)}" for graph in counter.graphs)
            outcome = f"{len(counter.graphs)} compile(s) for 8, 16, 32 rows: {kinds}"
        except Exception as error:  # ConstraintViolationError, raised while Dynamo builds the guards
            message = next(line for line in str(error).splitlines() if "marked" in line).strip(" -").split(". ")[0]
            outcome = f"{type(error).__name__}: {message}"
        print(f"{mark.__name__}, {fn.__name__}: {outcome}")
        outcomes[(mark.__name__, fn.__name__)] = (outcome, list(counter.graphs))
# --8<-- [end:maybe-mark]
assert outcomes[("mark_dynamic", "unroll_rows")][0].startswith("ConstraintViolationError"), "a promise: it raises"
for fn, mark_counts in (("unroll_rows", 3), ("add_positions", 1)):
    graphs = outcomes[("maybe_mark_dynamic", fn)][1]
    assert len(graphs) == mark_counts and all(is_symbolic(graph) == (fn == "add_positions") for graph in graphs)
assert len(outcomes[("no_mark", "unroll_rows")][1]) == 3, "automatic dynamic: as many static graphs as sizes too"
assert len(outcomes[("no_mark", "add_positions")][1]) == 2, "automatic dynamic: static, then symbolic"
assert len(outcomes[("mark_dynamic", "add_positions")][1]) == 1


# --8<-- [start:per-call]
def static_entry(x):  # called at 8 rows only: it keeps one static graph
    return add_positions(x)


def symbolic_entry(x):
    return add_positions(x)


def paired(steps, *, pairs=21, block_ms=20.0):
    """Time the sides in pairs of blocks of calls, alternating (_profile_diff.paired_times); print each side's
    median and fastest block, and its ratio to the first side: the median of the per-pair ratios, 10th-90th pct."""
    times = _profile_diff.paired_times(steps, pairs=pairs, block_ms=block_ms)
    blocks = {name: [statistics.median(wall for _, wall in block) * 1e3 for block in side]
              for name, side in times.items()}  # µs per call, one value per block
    first = next(iter(blocks))
    for name, values in blocks.items():
        ratios = sorted(value / base for value, base in zip(values, blocks[first], strict=True))
        deciles = statistics.quantiles(ratios, n=10)
        ratio = f", {statistics.median(ratios):.2f}x the first ({deciles[0]:.2f}-{deciles[-1]:.2f})"
        ratio = "" if name == first else ratio
        print(f"  {name:34} {statistics.median(values):7.1f} µs per call (fastest block {min(values):6.1f}){ratio}")
    return {name: {"median": statistics.median(values), "fastest": min(values)} for name, values in blocks.items()}


small = rows(8)
with fresh_cache():
    static_small = torch.compile(static_entry)  # called at 8 rows only: a static graph
    static_small(small)
    symbolic = torch.compile(symbolic_entry)
    marked_small = small.clone()
    torch._dynamo.mark_dynamic(marked_small, 0)
    symbolic(marked_small)  # the symbolic graph of mark_dynamic, its size hint 8
print("8 rows, 21 pairs of blocks of 20 ms:")
per_call = paired({"static graph (compiled for 8 rows)": lambda: static_small(small),
                   "symbolic graph (mark_dynamic)": lambda: symbolic(small)})
# --8<-- [end:per-call]
static_us, symbolic_us = (per_call[name]["fastest"] for name in per_call)
# Another process on the machine slows whole blocks, never speeds one up: compare each side's fastest block.
assert symbolic_us > static_us, "the symbolic graph's call costs more at 8 rows (direction only, on the CPU)"


# --8<-- [start:where-it-goes]
def fastest_us(call, calls=2000, rounds=25):  # many short rounds: the fastest is one nothing else got in the way of
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


parts = {}
for name, entry_point in (("static", static_entry), ("symbolic", symbolic_entry)):
    entry = _debug_get_cache_entry_list(entry_point.__code__)[0]  # its one cache entry
    body = types.FunctionType(entry.code, entry_point.__globals__)  # Dynamo's bytecode, run without its guards
    calls_made = [i.argval for i in dis.get_instructions(entry.code) if i.opname == "LOAD_ATTR"]
    check = entry.guard_manager.check
    parts[name] = {"guards": fastest_us(lambda check=check: check({"x": small})),
                   "bytecode": fastest_us(lambda body=body: body(small)), "calls": calls_made}
    print(f"{name:8}: guards {parts[name]['guards']:.2f} µs, the bytecode that calls the graph "
          f"{parts[name]['bytecode']:.2f} µs; it calls torch._dynamo.utils.{', '.join(calls_made)}")
size_read = fastest_us(lambda: dynamo_utils.call_size(small, 0))
plain_read = fastest_us(lambda: small.size(0))
print(f"call_size(x, 0) alone: {size_read:.2f} µs (a function under torch._disable_dynamo); "
      f"x.size(0): {plain_read:.2f} µs")
# --8<-- [end:where-it-goes]
assert "call_size" in parts["symbolic"]["calls"] and "call_size" not in parts["static"]["calls"]
assert parts["symbolic"]["guards"] > parts["static"]["guards"], "the shape guard is one more check, in Python"
assert size_read > 2 * plain_read, "reading the size through a dynamo-disabled function costs several times more"


# --8<-- [start:dynamic-false]
def static_flag_entry(x):
    return add_positions(x)


counter = CompileCounterWithBackend("inductor")
with fresh_cache():
    static_flag = torch.compile(static_flag_entry, backend=counter, dynamic=False)
    static_flag(small)
same_graph = counter.graphs[0].code == counters["automatic dynamic"][0].graphs[0].code
print(f"dynamic=False at 8 rows: the same static graph as dynamic=None's first: {same_graph}")
print("8 rows:")
flag_call = paired({"static graph, dynamic=None": lambda: static_small(small),
                    "static graph, dynamic=False": lambda: static_flag(small)})
patch_config = make_set_enable_dynamic(False)  # what torch.compile(dynamic=False) runs around every call
patch_us = fastest_us(lambda: patch_config()())
print(f"the config patch torch.compile(dynamic=False) applies and reverts on every call, alone: {patch_us:.2f} µs")
# --8<-- [end:dynamic-false]
assert same_graph
plain_us, flag_us = (flag_call[name]["fastest"] for name in flag_call)
assert flag_us > plain_us + 0.5 * patch_us, "dynamic=False adds its config patch to every call (fastest blocks)"
entries = {fn.__name__: len(_debug_get_cache_entry_list(fn.__code__)) for fn in (static_entry, symbolic_entry)}
assert set(entries.values()) == {1}, f"no call above compiled a second graph: {entries}"


# --8<-- [start:parallel]
print(f"this process runs torch on {torch.get_num_threads()} thread(s); each compile below sets Inductor's cpp.threads")
kernels = {}
for name, first_rows, marked_dynamic, threads in (
    ("static graph, 65536 rows, 2 threads", 65536, False, 2),
    ("symbolic graph, hint 8, 2 threads", 8, True, 2),
    ("symbolic graph, hint 65536, 2 threads", 65536, True, 2),
    ("symbolic graph, hint 65536, 1 thread", 65536, True, 1),
):
    torch._dynamo.reset()
    codes = []
    with fresh_cache(), torch._inductor.config.patch({"cpp.threads": threads}), \
            mock.patch.object(GraphLowering, "save_output_code", codes.append):
        first = rows(first_rows)
        if marked_dynamic:
            torch._dynamo.mark_dynamic(first, 0)
        torch.compile(add_positions)(first)
    kernels[name] = codes[0]
    loop = re.search(r"for\(int64_t x0=.*?x0<(.*?);", codes[0])[1]
    region = "#pragma omp parallel" if "omp parallel" in codes[0] else "no parallel region"
    print(f"{name:38}: rows loop up to {loop}, {region}")
# --8<-- [end:parallel]
parallel = [("omp parallel" in code) for code in kernels.values()]
assert parallel == [True, False, True, False], "the hint and the thread count decide whether the loop is parallel"
assert all("ks0" in code for name, code in kernels.items() if "symbolic" in name), "one kernel for every size"


# --8<-- [start:scalars]
class KeepsDynamoGraphs:
    """A backend: keeps what Dynamo's graph takes (before AOTAutograd changes it), then runs AOTAutograd with its
    passes, as Inductor would, and keeps the forward graph it produces."""

    def __init__(self):
        self.inputs, self.aot_graphs = [], []
        self.aot = aot_autograd(fw_compiler=self.keep_aot_graph)

    def keep_aot_graph(self, graph_module, example_inputs):
        self.aot_graphs.append(graph_module)
        return graph_module.forward

    def __call__(self, graph_module, example_inputs):
        self.inputs.append(inputs_of(graph_module))
        return self.aot(graph_module, example_inputs)


def fill(x, factor):  # a float that an op takes as a Python number
    return x + torch.full((16,), factor)


ints, floats = (2, 3, 4), (0.5, 0.25, 0.125)
cases = {  # label: function, values, torch.compile's dynamic=, config changes
    "int, default": (scale, ints, None, {}),
    "int, automatic_dynamic_shapes=False": (scale, ints, None, {"automatic_dynamic_shapes": False}),
    "int, dynamic=False": (scale, ints, False, {}),
    "int, assume_static_by_default=False": (scale, ints, None, {"assume_static_by_default": False}),
    "int, dynamic=True": (scale, ints, True, {}),
    "int, dynamic=True, specialize_int=True": (scale, ints, True, {"specialize_int": True}),
    "int in range(), dynamic=True": (repeat, ints, True, {}),
    "int, default, values 2, 3, 0, 1": (scale, (2, 3, 0, 1), None, {}),
    "float, default": (scale, floats, None, {}),
    "float, dynamic=True": (scale, floats, True, {}),
    "float, dynamic=True, specialize_float=True": (scale, floats, True, {"specialize_float": True}),
    "float into torch.full": (fill, floats, None, {}),
}
# AOTAutograd's pass that turns a SymFloat back into tensor arithmetic logs each op it cannot turn (at INFO)
tensorify_log, tensorify_messages = logging.getLogger("torch.fx.passes._tensorify_python_scalars"), io.StringIO()
tensorify_log.addHandler(logging.StreamHandler(tensorify_messages))
tensorify_log.setLevel(logging.INFO)
results = {}
for label, (fn, values, dynamic, changes) in cases.items():
    torch._dynamo.reset()
    backend = KeepsDynamoGraphs()
    tensorify_messages.seek(0), tensorify_messages.truncate()
    with torch._dynamo.config.patch(changes), compile_tools.captured_logs(recompiles=True) as log:
        compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
        for value in values:
            x = rows(8)
            torch.testing.assert_close(compiled(x, value), fn(x, value))
    kept = len(_debug_get_cache_entry_list(fn.__code__))  # the graphs in Dynamo's cache for this function
    reasons = [re.sub(r"\s+#\s+(?!\().*", "", line.strip()[2:]) for line in log.getvalue().splitlines()
               if re.match(r"\s*- \d+/\d+: ", line)]
    results[label] = {"compiles": kept, "backend_calls": len(backend.inputs), "inputs": backend.inputs,
                      "reasons": reasons, "aot": backend.aot_graphs}
    calls = f" (the backend was called {len(backend.inputs)} times)" if len(backend.inputs) != kept else ""
    print(f"{label}: {kept} compile(s) for {len(values)} values{calls}")
    print(f"    last graph takes {backend.inputs[-1]}")
    if reasons:
        print(f"    recompile reasons: {'; '.join(reasons)}")
    if tensorify_messages.getvalue():
        print(f"    AOTAutograd's tensorify pass: {'; '.join(tensorify_messages.getvalue().split(chr(10))[:-1])}")
    results[label]["tensorify"] = tensorify_messages.getvalue()
# --8<-- [end:scalars]
counts = {label: result["compiles"] for label, result in results.items()}
assert counts == {
    "int, default": 2, "int, automatic_dynamic_shapes=False": 3, "int, dynamic=False": 3,
    "int, assume_static_by_default=False": 1, "int, dynamic=True": 1, "int, dynamic=True, specialize_int=True": 3,
    "int in range(), dynamic=True": 3, "int, default, values 2, 3, 0, 1": 2,
    "float, default": 2, "float, dynamic=True": 1, "float, dynamic=True, specialize_float=True": 3,
    "float into torch.full": 3,
}, counts
assert "Sym(s" in results["int, default"]["inputs"][-1] and "Sym(" not in results["int, default"]["inputs"][0]
assert results["int, dynamic=True"]["inputs"] == [results["int, assume_static_by_default=False"]["inputs"][0]]
assert not any("factor" in inputs for inputs in results["int, dynamic=True, specialize_int=True"]["inputs"])
assert results["int, default"]["reasons"] == ["0/0: factor == 2"], "the first graph's constant failed"
assert "f64[]" in results["float, default"]["inputs"][-1] and "SymFloat" in results["float, default"]["inputs"][-1]
assert "f64[]" in results["float, dynamic=True"]["inputs"][0], "dynamic=True: a tensor input from the first call"
assert not any("factor" in inputs for inputs in results["float, dynamic=True, specialize_float=True"]["inputs"])
assert results["float into torch.full"]["backend_calls"] == 4, "one graph with the float as input, thrown away"
assert "full" in results["float into torch.full"]["tensorify"] and not results["float, default"]["tensorify"]
assert any("remove_tensorify_specialized_graphargs" in reason for reason in results["float into torch.full"]["reasons"])

# --8<-- [start:float-aot]
aot_graph = results["float, default"]["aot"][-1]  # what AOTAutograd hands on, after its passes, for the float input
print(aot_graph.print_readable(print_output=False, include_stride=False, include_device=False).strip())
# --8<-- [end:float-aot]
assert "f64[]" in aot_graph.code or "mul.Tensor" in aot_graph.code
assert "item" not in aot_graph.code, "the SymFloat was turned back into tensor arithmetic"
print(f"(the example ran for {time.perf_counter() - started:.0f} s)")
