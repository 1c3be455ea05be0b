"""tlparse: one browsable report of everything torch.compile did, built from a TORCH_TRACE log.

Run it as it is: `python examples/debugging/tlparse.py`. It needs the `tlparse` command
(`pip install tlparse`). TORCH_TRACE is read when torch is imported, so a small program runs in a
subprocess with the variable set; then tlparse turns its log into HTML. The report goes to the
folder named by EXECDOCS_ARTIFACTS when the documentation build sets it (the site publishes it),
else to a temporary folder. CPU tensors everywhere, so Inductor generates C++, also on a GPU machine.
"""
# CPU tensors only; its checks hold for the CPU build's torch, not for the older torch of the
# GPU image, which therefore shows this run as a recording.
# execdocs: devices=cpu

import html
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path


def run(command, **options):
    """subprocess.run that fails with the command's own error output, not just its exit code."""
    done = subprocess.run(command, capture_output=True, text=True, **options)
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


# --8<-- [start:program]
PROGRAM = """\
import torch


def fn(x):
    y = torch.sin(x) * 2
    torch._dynamo.graph_break()  # a graph break, on purpose
    return torch.cos(y) + 1


compiled = torch.compile(fn)
compiled(torch.randn(8))
compiled(torch.randn(8, dtype=torch.float64))  # a new dtype fails a guard: a recompile
"""
# --8<-- [end:program]

# --8<-- [start:trace]
work = Path(tempfile.mkdtemp())
(work / "program.py").write_text(PROGRAM)
env = dict(os.environ, TORCH_TRACE=str(work / "trace"))  # read at `import torch`: set it for the child
env.update(TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")  # compile for real, every run
run([sys.executable, "program.py"], cwd=work, env=env)

(log,) = (work / "trace").iterdir()  # one log per process (per rank, in a distributed job)
lines = log.read_text().splitlines()
log_name = re.sub(r"_trace_\w+\.log$", "_trace_<random>.log", log.name)  # the name ends in a random suffix
records = [json.loads(line.split("] ", 1)[1]) for line in lines if not line.startswith("\t")]
print(f"{log_name}: {log.stat().st_size / 1000:.0f} kB, {len(lines)} lines, {len(records)} records")
ids = ("frame_id", "frame_compile_id", "attempt", "has_payload", "compiled_autograd_id", "rank")
kinds = Counter(next(key for key in record if key not in ids) for record in records)
print("records by kind:", ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()))
print("one record, with its payload on the lines below it that start with a tab:")
start = next(i for i, line in enumerate(lines) if '"torch_version"' in line)
# the prefix's date, time and process id change with every run: replaced
print(re.sub(r"^(\w)\d{4} [\d:.]+ \d+ ", r"\1<MMDD> <time> <pid> ", "\n".join(lines[start : start + 6])))
# --8<-- [end:trace]
assert kinds["dynamo_start"] == 4, "one dynamo_start per compile: fn and its resume function, twice each"
assert kinds["inductor_output_code"] == 4 and kinds["artifact"] > 10

# --8<-- [start:tlparse]
artifacts = Path(os.environ.get("EXECDOCS_ARTIFACTS") or tempfile.mkdtemp())
report = artifacts / "tlparse"
tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")  # `pip install tlparse`
done = run([tlparse, str(log), "-o", str(report), "--overwrite", "--no-browser"])
print(f"$ tlparse {log_name} -o tlparse --overwrite --no-browser")
print(done.stdout.strip() or done.stderr.strip())

for entry in sorted(report.iterdir(), key=lambda path: (path.is_dir(), path.name)):
    if entry.is_dir():
        print(f"  {entry.name + '/':28} {len(list(entry.iterdir())):3} files")
    else:
        print(f"  {entry.name:28} {entry.stat().st_size / 1000:6.1f} kB")
# --8<-- [end:tlparse]
assert (report / "index.html").exists() and (report / "compile_directory.json").exists()

# The published copy leaves out the raw log and its JSON forms (nothing in the report links to them)
# and this machine's folders, which appear in every stack trace.
for name in ("raw.log", "raw.jsonl", "chromium_events.json"):
    (report / name).unlink(missing_ok=True)
for path in report.rglob("*"):
    if path.is_file():
        text = path.read_text(errors="replace")
        text = text.replace(sysconfig.get_path("purelib") + "/", "<site-packages>/").replace(f"{work}/", "")
        path.write_text(text)
size = sum(path.stat().st_size for path in report.rglob("*") if path.is_file())
assert size < 500_000, f"the published report stays small: {size} bytes"

# --8<-- [start:compile-ids]
directory = json.loads((report / "compile_directory.json").read_text())


def artifact_kind(name):
    """'dynamo_output_graph_19.txt' -> 'dynamo_output_graph': the kind, without the running number."""
    return re.sub(r"(_[0-9a-z]{52})?_\d+\.\w+$", "", name)


def kinds_of(compile_id):
    return [artifact_kind(artifact["name"]) for artifact in directory[compile_id]["artifacts"]]


compile_ids = [key for key in directory if key != "[-/-]"]  # [-/-]: logged outside any compile
full_compile = next(kinds_of(key) for key in compile_ids if "dynamo_output_graph" in kinds_of(key))
for compile_id in compile_ids:
    kinds = kinds_of(compile_id)
    if set(full_compile) <= set(kinds):
        extra = [kind for kind in kinds if kind not in full_compile]
        listed = (
            "\n        ".join(textwrap.wrap(", ".join(kinds), 92))
            if kinds == full_compile
            else (f"the {len(full_compile)} above" + (f", and {', '.join(extra)}" if extra else ""))
        )
    else:
        listed = ", ".join(kinds)
    print(f"{compile_id:8} {len(kinds):2} artifacts: {listed}")
# --8<-- [end:compile-ids]
frames = {re.match(r"\[(\d+)/(\d+)", key).groups() for key in compile_ids}
print("(frame, compile) pairs:", sorted(frames))
assert len(frames) >= 2, "two or more compile ids"
assert {frame for frame, _ in frames} == {"0", "1"}, "frame 0 is fn, frame 1 the resume function after the break"
assert {compile for _, compile in frames} == {"0", "1"}, "each frame compiled twice: the float64 call recompiled"


def stack_trie(page):
    """The 'Stack' tree at the top of index.html, as indented text."""

    class Trie(HTMLParser):
        depth, inside, lines = 0, False, [[0, ""]]  # [indent, text] per line

        def handle_starttag(self, tag, attrs):
            if ("class", "stack-trie") in attrs:
                self.inside = True
            elif self.inside and tag == "ul":
                self.depth += 1
            elif self.inside and tag in ("li", "br"):  # an entry, or the source line under it
                self.lines.append([self.depth - 1 + (tag == "br") * 2, ""])

        def handle_endtag(self, tag):
            if self.inside and tag == "ul":
                self.depth -= 1
                self.inside = self.depth > 0

        def handle_data(self, data):
            if self.inside:
                self.lines[-1][1] += html.unescape(data)

    parser = Trie()
    parser.feed(page)
    return "\n".join("  " * indent + " ".join(text.split()) for indent, text in parser.lines if text.strip())


# --8<-- [start:stack-trie]
index = (report / "index.html").read_text()
print(stack_trie(index))
# --8<-- [end:stack-trie]
assert "torch_dynamo_resume_in_fn" in stack_trie(index), "the resume function is a frame of its own"
assert stack_trie(index).splitlines()[0] == "[0/0] [0/1] program.py:4 in fn", "fn's stacks: fn alone, no caller"
status = dict(re.findall(r"<a href='#(\[[\d/]+\])' class='status-(\w+)'>", index))
assert status["[0/0]"] == status["[0/1]"] == "break" != status["[1/0]"], "fn's compiles are marked as restarted"

# --8<-- [start:breaks]
for compile_id in compile_ids:
    for artifact in directory[compile_id]["artifacts"]:
        kind, text = artifact_kind(artifact["name"]), (report / artifact["url"]).read_text()
        if kind == "dynamo_graph_break_reason":
            print(f"{compile_id} {kind}:\n    " + "\n    ".join(text.splitlines()[:5]))
        elif kind == "recompile_reasons":
            print(f"{compile_id} {kind}: {text}")

failures = (report / "failures_and_restarts.html").read_text()
rows = re.findall(r">(\[[\d/_]+\])</a>\s*</td>\s*<td>\s*(\w+)", failures)  # compile id, failure type
print("failures_and_restarts.html:", rows)
# --8<-- [end:breaks]
reasons = {
    artifact_kind(a["name"]): (report / a["url"]).read_text()
    for key in compile_ids
    for a in directory[key]["artifacts"]
}
assert "torch._dynamo.graph_break()" in reasons["dynamo_graph_break_reason"], "the report names the graph break"
assert "dtype mismatch" in reasons["recompile_reasons"], "and why frame 0 was compiled again"
assert "failures_and_restarts.html" in index and len(rows) == 2, "one restart per compile of fn"
