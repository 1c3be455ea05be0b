"""What a markdown-exec block prints to put an example's output on its page.

    ```python exec="on" id="overview/end_to_end:fx-graph"
    from execdocs import show
    show("overview/end_to_end:fx-graph")
    ```

The output comes from the stored result (run first if stale and runnable here), with a line that
stamps the versions it came from. Output recorded on another kind of device is framed in an
admonition that says so.
"""

import re
import sys
import textwrap

from execdocs import runner
from execdocs.environment import can_run, machine_device, preview
from execdocs.examples import Example
from execdocs.pages import (
    Reference,
    default_device,
    is_recording_gap,
    missing_quotes,
    parse_target,
    problem,
    quote_matches,
    what_quotes_ask,
)
from execdocs.store import Result

DEVICE_LABELS = {"cpu": "CPU", "cuda": "GPU"}


class ShowError(Exception):
    """The section can't be shown; the message says why and what to do."""


def section_result(target: str, device: str | None) -> tuple[Reference, Result | None, str | None]:
    """The reference, its result, and (in preview only) why that result is missing or stale."""
    name, section = parse_target(target)
    example = Example(name)
    device = device or default_device(example, machine_device())
    reference = Reference("", 0, target, example, section, device, shows_output=True)
    result = runner.ensure(example, device) if example.runs_on(device) else None
    runnable = can_run(device, example.gpus)
    message = problem(reference, device, result, runnable)
    if message and preview() and is_recording_gap(reference, device, result, runnable):
        return reference, result, message
    if message:
        raise ShowError(message)
    return reference, result, None


def fenced(text: str, lang: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def device_name(result: Result) -> str:
    return _device_name(result.device, result.stamp)


def _device_name(device: str, stamp: dict) -> str:
    if device != "cuda":
        return "CPU"
    gpu = stamp["gpu"].removeprefix("NVIDIA ")
    return f"{stamp['gpus']}× {gpu} ({stamp['link']})" if "gpus" in stamp else gpu


def environment_line(device: str, stamp: dict) -> str:
    """The device and the versions that printed an output: "CPU · torch 2.13.0 · Python 3.11.7"."""
    parts = [_device_name(device, stamp), f"torch {stamp['torch']}", f"Python {stamp['python']}"]
    if device == "cuda":
        parts += [f"triton {stamp['triton']}", f"CUDA {stamp['cuda']}"]
    if "nccl" in stamp:
        parts.append(f"NCCL {stamp['nccl']}")
    if "host" in stamp:
        parts.append(f"host {stamp['host']}{host_speed(stamp)}")
    return " · ".join(parts)


def host_speed(stamp: dict) -> str:
    """The host yardstick of a GPU recording (examples/host_yardstick.py): launch-bound times scale with it."""
    if "host_small_op_us" not in stamp:
        return ""
    op, call = stamp["host_small_op_us"], stamp["host_small_compiled_call_us"]
    return f" (launches a small op in {op} µs, a small compiled call in {call} µs)"


def stamp_line(result: Result) -> str:
    return f"{environment_line(result.device, result.stamp)} · {result.stamp['date']}"


def recorded_title(result: Result) -> str:
    where = result.stamp["gpu"] if result.device == "cuda" else "CPU"
    if "gpus" in result.stamp:
        where = f"{result.stamp['gpus']}× {where}"
    return f"Recorded on {where} with torch {result.stamp['torch']} on {result.stamp['date']}"


def quoted_lines(target: str, text: str, quotes: tuple[str, ...]) -> str:
    """The lines of a section's output that contain one of `quotes`, in output order; every quote must match."""
    unmatched = missing_quotes(text, quotes)
    if unmatched:
        raise ShowError(f"show_quote: no line of {target}'s output {what_quotes_ask(unmatched)}")
    return "\n".join(line for line in text.splitlines() if any(quote_matches(quote, line) for quote in quotes))


def render(
    target: str, device: str | None = None, lang: str = "text", quotes: tuple[str, ...] = ()
) -> tuple[str, Result | None]:
    """The Markdown that shows a section's output (only the lines containing `quotes`, if given), and its result."""
    reference, result, preview_warning = section_result(target, device)
    if result is None:  # preview only: nothing recorded yet
        return f'!!! failure "Not recorded yet"\n\n    {preview_warning}\n', None
    text = result.sections[reference.section]
    output = fenced(quoted_lines(target, text, quotes) if quotes else text, lang)
    source = f"<code>{reference.example.described}</code>"
    stamp = f'<p class="execdocs-stamp">Output of {source} · {stamp_line(result)}</p>'
    if result.device == machine_device():
        return f"{output}\n{stamp}\n", result
    title = recorded_title(result)
    why = (
        f"This output needs a {DEVICE_LABELS[result.device]} and this build runs on a "
        f"{DEVICE_LABELS[machine_device()]}, so the page shows the committed recording; "
        "the tests fail when it no longer matches its source."
    )
    if preview_warning:
        why = f"**Stale: this preview shows an outdated recording.** {preview_warning}"
    body = f"{why}\n\n{output}\n\n{stamp}"
    return f'!!! recorded "{title}"\n\n{textwrap.indent(body, "    ")}\n', result


def print_to_block(markdown: str) -> None:
    """Print through the calling block's own `print`: markdown-exec captures a block's output by
    handing the block a `print` of its own, which a function defined elsewhere would bypass."""
    block_globals = sys._getframe(2).f_globals  # the caller of show(), show_tabs() or show_plot()
    block_globals.get("print", print)(markdown)


def show(target: str, device: str | None = None, lang: str = "text") -> None:
    """Print a section's output as Markdown; `device="cuda"` asks for the GPU recording."""
    print_to_block(render(target, device, lang)[0])


def show_quote(target: str, *quotes: str, device: str | None = None) -> None:
    """Print the lines of a section's output that contain `quotes` (a quote that begins with "^": the lines that
    begin with the rest): for a page that cites figures another page measured, so that each figure is the
    output itself and a changed output fails the build."""
    print_to_block(render(target, device, quotes=quotes)[0])


def show_tabs(target: str, lang: str | dict[str, str] = "text") -> None:
    """The GPU recording and the CPU output of one section, side by side in content tabs.

    `lang` may differ per device, e.g. {"cuda": "python", "cpu": "cpp"} for generated kernels.
    """
    tabs, results = [], []
    for device in ("cuda", "cpu"):
        text, result = render(target, device, lang if isinstance(lang, str) else lang[device])
        label = (device_name(result) if result else DEVICE_LABELS[device]) + (
            " (recorded)" if device != machine_device() else ""
        )
        tabs.append(f'=== "{label}"\n\n{textwrap.indent(text, "    ")}')
        results.append(result)
    print_to_block("\n".join(tabs) + releases_line(*results))


# The Versions page's address relative to the page that shows the line; the MkDocs hook fills it in.
VERSIONS_HREF = "execdocs-versions-page"


def releases_line(gpu: Result | None, cpu: Result | None) -> str:
    """Where two tabs ran different torch releases, one line under them that says so."""
    if gpu is None or cpu is None:
        return ""
    releases = [result.stamp["torch"].split("+")[0] for result in (gpu, cpu)]
    if releases[0] == releases[1]:
        return ""
    return (
        f'\n<p class="execdocs-releases">The tabs ran different torch releases ({releases[0]} on the '
        f"{device_name(gpu)}, {releases[1]} on the CPU): a difference between them may be the release's, "
        f'not the device\'s. <a href="{VERSIONS_HREF}#the-examples-that-changed-or-failed">Versions</a> lists the '
        "CPU examples that print something else under the other release.</p>\n"
    )
