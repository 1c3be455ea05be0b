"""torch._dynamo.explain and TORCH_LOGS="graph_breaks,recompiles", side by side on one real model.

Run it as it is: `python examples/debugging/explain_and_logs.py` (it needs transformers). The model is a
small Llama from transformers, built from a config with random weights, so nothing is downloaded;
asked for its attention weights, it breaks the graph. Dynamo's graphs run as they are (backend "eager"):
this page is about what Dynamo captures, not about Inductor.
"""

# execdocs: devices=cpu

import itertools
import re

import torch
from torch._dynamo.testing import CompileCounter

import compile_tools
from debugging._llama import in_package, small_llama, tokens

# --8<-- [start:patterns]
BREAK_AT = re.compile(r"^Graph break (?:\(user stack suppressed due to duplicate graph break\) )?in user code at (\S+)")
RECOMPILE_REASON = re.compile(r"^- \d+/\d+: ")  # "- 19/0: tensor 'x' size mismatch at index 1. expected 16, actual 24"
# One recompile: a frame whose cached graphs' guards all failed; it lists one guard failure per cached graph
RECOMPILING = re.compile(r"^Recompiling function ")
GAVE_UP = "Skipping the function and falling back to eager"
# --8<-- [end:patterns]


model = small_llama()


# --8<-- [start:explain]
report = torch._dynamo.explain(model)(input_ids=tokens(16), output_attentions=True)
operations = [len(ops) for ops in report.ops_per_graph]
print(f"explain: {report.graph_count} graphs, graph_break_count {report.graph_break_count}, "
      f"{len(report.break_reasons)} break reasons; operations per graph: {operations}")  # fmt: skip
for reason in report.break_reasons:
    frame = reason.user_stack[-1]
    print(f"  {reason.reason.splitlines()[0]}  ({in_package(frame.filename)}:{frame.lineno})")
# --8<-- [end:explain]
assert report.graph_break_count == report.graph_count - 1, "explain counts graphs, not breaks"
assert report.graph_count == 10 and len(report.break_reasons) == 3
assert all("logging.Logger" in reason.reason for reason in report.break_reasons)

# --8<-- [start:logs]
counter = CompileCounter()  # counts the frames Dynamo compiles, and runs their graphs as they are
compiled = torch.compile(model, backend=counter)
calls = []
with compile_tools.captured_logs(graph_breaks=True, recompiles=True) as log:
    for length in (16, 16, 24):  # the same shape twice, then a longer sequence
        start, frames = len(log.getvalue()), counter.frame_count
        compiled(input_ids=tokens(length), output_attentions=True)
        # Dynamo numbers each code object it starts on (the "12" of "12/0"), whether a graph comes of it or not
        numbered = torch._dynamo.convert_frame.FRAME_COUNTER
        calls.append((length, counter.frame_count - frames, log.getvalue()[start:], numbered))
for length, frames, text, numbered in calls:
    lines = text.splitlines()
    # each break message: its place, and whether its reason (the next line) says Dynamo gave up on the frame
    breaks = [(in_package(match.group(1)), GAVE_UP in reason)
              for line, reason in itertools.pairwise([*lines, ""]) if (match := BREAK_AT.match(line))]
    recompiles = sum(bool(RECOMPILING.match(line)) for line in lines)
    failures = [line.strip() for line in lines if RECOMPILE_REASON.match(line.strip())]
    print(f"call with {length} tokens: {frames} frames compiled, {len(breaks)} graph-break messages, "
          f"{recompiles} recompiles ({len(failures)} guard failures listed); "
          f"frames numbered so far: {numbered}")  # fmt: skip
    for place in sorted({place for place, _ in breaks}, key=[place for place, _ in breaks].index):
        here = [gave_up for at, gave_up in breaks if at == place]
        print(f"  graph break x{len(here)} at {place}, {sum(here)} of them gave up on the whole frame")
    if failures:
        print(f"  first recompile's reason: {failures[0]}")
# --8<-- [end:logs]
first, second, third = calls
assert first[3] > first[1], "more frames numbered than compiled: frames Dynamo gave up on, or that made no graph"
assert first[1] == report.graph_count, "the real run compiles the frames explain counted"
assert "is_initialized == False" in first[2], "a recompile inside the first call: the KV cache changed state"
assert second[1] == 0 and second[2] == "", "the logs say nothing when Dynamo compiles nothing"
assert third[1] > 0 and "size mismatch" in third[2], "a longer sequence: a recompile for every frame that guards on it"
assert first[2].count("Graph break") > len(report.break_reasons), "the logs print every break tracing meets"
assert first[2].count(GAVE_UP) == 4, "four break messages gave up on their whole frame"
assert "output_capturing.py" in first[2] and "output_capturing.py" not in str(report.break_reasons), (
    "the logs show breaks that explain does not list"
)

# --8<-- [start:message]
first_log = calls[0][2]  # what the logs printed during the first call
message = first_log[first_log.index("Graph Break Reason") :]
print(message[: message.index("For more details")].strip())
# --8<-- [end:message]
assert "`torch._dynamo.config.ignore_logging_functions`" in message, "the hint names the setting"

# --8<-- [start:explain-resets]
before = counter.frame_count
torch._dynamo.explain(model)(input_ids=tokens(16), output_attentions=True)
compiled(input_ids=tokens(16), output_attentions=True)  # the shape the model was compiled for
print(f"after explain: the compiled model compiled {counter.frame_count - before} frames again")
# --8<-- [end:explain-resets]
assert counter.frame_count - before == report.graph_count, "explain reset Dynamo: everything compiled is gone"

# --8<-- [start:the-fix]
for attention in ("sdpa", "eager"):
    weights = small_llama(attention)(input_ids=tokens(16), output_attentions=True).attentions
    print(f"attn_implementation={attention!r}: {len(weights)} attention-weight tensors returned")
fixed = torch._dynamo.explain(small_llama("eager"))(input_ids=tokens(16), output_attentions=True)
print(f"attn_implementation='eager', explain: {fixed.graph_count} graphs, {len(fixed.break_reasons)} break reasons")
with compile_tools.captured_logs(graph_breaks=True) as log:
    torch.compile(small_llama("eager"), backend="eager")(input_ids=tokens(16), output_attentions=True)
fixed_breaks = [in_package(match.group(1)) for line in log.getvalue().splitlines()
                if (match := BREAK_AT.match(line))]
print(f"attn_implementation='eager', the graph_breaks log: {len(fixed_breaks)} messages, "
      f"at {sorted(set(fixed_breaks))}")
# --8<-- [end:the-fix]
assert len(small_llama("sdpa")(input_ids=tokens(16), output_attentions=True).attentions) == 0, "sdpa: none"
assert fixed.graph_count < report.graph_count and not fixed.break_reasons, "no more break in the attention"
