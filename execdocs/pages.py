"""What the pages ask of the examples, and whether the stored results can answer it.

A page refers to an example in two ways: a code block that includes one of its sections with
`--8<-- "examples/<chapter>/<topic>.py:<section>"`, and a markdown-exec block that calls
`show("<chapter>/<topic>:<section>")` (or `show_tabs`, `show_quote` or `show_plot`) to print that section's output.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

from execdocs.examples import Example, ExampleError
from execdocs.layout import DOCS, relative
from execdocs.markdown_blocks import Block, blocks
from execdocs.store import Result

SHOW_CALLS = {"show": None, "show_plot": None, "show_quote": None, "show_tabs": ("cuda", "cpu")}


class PageError(Exception):
    """A page that refers to examples in a way that can't work; the message names page and line."""


@dataclass(frozen=True)
class Reference:
    page: str
    line: int
    block_id: str
    example: Example
    section: str
    device: str | None  # None: whatever device the build runs on
    shows_output: bool  # False for a code include
    quotes: tuple[str, ...] = ()  # show_quote's: the output's lines that contain one of these are shown

    @property
    def where(self) -> str:
        if not self.line:  # asked for by a show() call, outside any page we parsed
            return f"show({self.block_id!r})"
        return f"{self.page}:{self.line} (block {self.block_id})"


def parse_target(target: str) -> tuple[str, str]:
    """ "overview/end_to_end:fx-graph" -> ("overview/end_to_end", "fx-graph")."""
    name, _, section = target.partition(":")
    return name, section


def include_target(target: str) -> str:
    """ "examples/overview/end_to_end.py:fx-graph" -> "overview/end_to_end:fx-graph"."""
    return target.removeprefix("examples/").replace(".py:", ":", 1)


def default_device(example: Example, machine: str) -> str:
    """The build's own device, unless the example runs only elsewhere (then its recording is shown)."""
    return machine if example.runs_on(machine) else example.devices[0]


def _show_calls(block: Block, page: str) -> list[tuple[str, str | None, tuple[str, ...]]]:
    try:
        tree = ast.parse(block.body)
    except SyntaxError as error:
        raise PageError(
            f"{page}:{block.line + (error.lineno or 0)}: this Python block does not parse: {error.msg}"
        ) from None
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        if name not in SHOW_CALLS:
            continue
        if not node.args or not isinstance(node.args[0], ast.Constant):
            raise PageError(
                f"{page}:{block.line}: {name}() takes the section as a string literal, e.g. "
                f'{name}("overview/end_to_end:fx-graph"), so the build can find it.'
            )
        devices = (
            SHOW_CALLS[name] or [keyword.value.value for keyword in node.keywords if keyword.arg == "device"] or [None]
        )
        quotes = tuple(arg.value for arg in node.args[1:] if name == "show_quote" and isinstance(arg, ast.Constant))
        calls.extend((node.args[0].value, device, quotes) for device in devices)
    return calls


def page_references(path: Path) -> list[Reference]:
    page = relative(path)
    references = []
    for block in blocks(path.read_text()):
        block_id = block.attrs.get("id", f"at line {block.line}")
        targets = [
            (include_target(target), None, False, ()) for target in block.includes if target.startswith("examples/")
        ]
        if block.lang == "python" and block.executed:
            targets += [(target, device, True, quotes) for target, device, quotes in _show_calls(block, page)]
        for target, device, shows_output, quotes in targets:
            name, section = parse_target(target)
            references.append(
                Reference(page, block.line, block_id, Example(name), section, device, shows_output, quotes)
            )
    return references


def all_references() -> list[Reference]:
    return [reference for path in sorted(DOCS.rglob("*.md")) for reference in page_references(path)]


def record_command(example: Example, device: str) -> str:
    if device == "cuda" and example.gpus > 1:
        return (
            f"on a machine with {example.gpus} CUDA GPUs joined by NVLink (the example starts a process per GPU), "
            f"run `nox --no-venv -s record -- {example.name}`, then commit snippets/outputs/cuda/"
        )
    if device == "cuda":
        return (
            f"on a machine with a CUDA GPU, run `nox -s record -- {example.name}` "
            f"(in the GPU image: `nox --no-venv -s record -- {example.name}`), then commit snippets/outputs/cuda/"
        )
    return f"run `nox -s record -- {example.name}`, then commit snippets/outputs/cpu/"


def recording_problem(reference: Reference, device: str, result: Result | None) -> str | None:
    """Why the committed output of a device this machine can't run is missing or stale; None if it is fine."""
    example, where = reference.example, reference.where
    if result is None:
        return f"{where}: no {device} output of {example.described} is committed; {record_command(example, device)}."
    if result.ok and not result.is_fresh():
        return (
            f"{where}: the {device} output of {example.described} recorded on {result.stamp['date']} is stale: "
            f"its source ({', '.join(result.inputs)}) changed since; {record_command(example, device)}."
        )
    return None


def is_recording_gap(reference: Reference, device: str, result: Result | None, can_run_here: bool) -> bool:
    """A missing or stale output of a device this machine can't run: what a preview may show anyway."""
    return not can_run_here and recording_problem(reference, device, result) is not None


def problem(reference: Reference, device: str, result: Result | None, can_run_here: bool) -> str | None:
    """Why this reference can't be shown, in a sentence that says what to do; None if it can."""
    example, where = reference.example, reference.where
    try:
        sections = example.sections
        if not example.runs_on(device):
            return (
                f"{where}: {example.described} runs only on {', '.join(example.devices)}, "
                f"not {device}; ask for one of those."
            )
    except ExampleError as error:
        return f"{where}: {error}"
    if reference.section not in sections:
        return (
            f"{where}: {example.display_path} has no section '{reference.section}'. Wrap its code in "
            f"`# --8<-- [start:{reference.section}]` ... `# --8<-- [end:{reference.section}]`, or fix the name."
        )
    if not reference.shows_output:
        return None
    if result is None or not can_run_here:
        gap = recording_problem(reference, device, result)
        if gap:
            return gap
    if not result.ok:
        return (
            f"{where}: {result.error['location']} failed on {device}: {result.error['summary']}\n"
            f"    Run `{example.command}` to see the whole traceback; fix it and build again."
        )
    if reference.section not in result.sections:
        return (
            f"{where}: section '{reference.section}' of {example.described} never ran on {device}; "
            f"make sure the code between its markers runs, or re-record it."
        )
    unmatched = missing_quotes(result.sections[reference.section], reference.quotes)
    if unmatched:
        return (
            f"{where}: no line of the {device} output of section '{reference.section}' "
            f"{what_quotes_ask(unmatched)}; the output changed since the page quoted it: "
            "quote a line it prints now, and re-read the figures the prose takes from it."
        )
    return None


def quote_matches(quote: str, line: str) -> bool:
    """Whether show_quote's `quote` picks `line`: a line that contains it, or, for a quote that begins with
    "^", a line that begins with the rest (a table's row, and not the header that holds the same text)."""
    return line.startswith(quote[1:]) if quote.startswith("^") else quote in line


def what_quotes_ask(quotes: list[str]) -> str:
    """For an error: what the lines were asked for, e.g. "contains 'eager', begins with '    2 '"."""
    return ", ".join(
        f"begins with {quote[1:]!r}" if quote.startswith("^") else f"contains {quote!r}" for quote in quotes
    )


def missing_quotes(text: str, quotes: tuple[str, ...]) -> list[str]:
    """The quotes that pick no line of `text`."""
    return [quote for quote in quotes if not any(quote_matches(quote, line) for line in text.splitlines())]
