"""The small parsers the pipeline rests on."""

import subprocess

import pytest

from execdocs import record, runner
from execdocs.examples import Example, ExampleError
from execdocs.markdown_blocks import blocks
from execdocs.pages import include_target, page_references, record_command
from execdocs.render import recorded_title, stamp_line
from execdocs.run_example import gpu_links, with_section_switches, without_machine_paths
from execdocs.store import Result

PAGE = """\
# Title

```python title="examples/overview/end_to_end.py"
--8<-- "examples/overview/end_to_end.py:function"
```

!!! note

    ```python exec="on" id="overview/end_to_end:fx-graph"
    from execdocs import show
    show("overview/end_to_end:fx-graph", device="cuda")
    ```

````markdown
```python
not a block of its own: it sits inside a four-backtick fence
```
````
"""


def test_blocks_keep_attributes_and_drop_the_fence_indentation():
    found = blocks(PAGE)
    assert [block.lang for block in found] == ["python", "python", "markdown"]
    assert found[0].includes == ["examples/overview/end_to_end.py:function"]
    assert found[1].executed and found[1].attrs["id"] == "overview/end_to_end:fx-graph"
    assert found[1].body.startswith("from execdocs import show\n")
    assert found[1].line == 9


def test_page_references_cover_includes_and_show_calls(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    references = page_references(page)
    assert [(r.example.name, r.section, r.device, r.shows_output) for r in references] == [
        ("overview/end_to_end", "function", None, False),
        ("overview/end_to_end", "fx-graph", "cuda", True),
    ]


def test_include_targets_map_to_example_names():
    assert include_target("examples/dynamo/guards.py:tensor-match") == "dynamo/guards:tensor-match"


def test_section_markers_become_calls_line_for_line():
    source = "x = 1\n# --8<-- [start:one]\nprint(x)\n    # --8<-- [end:one]\n"
    rewritten = with_section_switches(source)
    assert rewritten.splitlines() == [
        "x = 1",
        "__execdocs_section__('one')",
        "print(x)",
        "    __execdocs_section__(None)",
    ]


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        ("# --8<-- [start:one]\n", "never ends"),
        ("# --8<-- [end:one]\n", "ends without a start"),
        ("# --8<-- [start:One]\n# --8<-- [end:One]\n", "lowercase words"),
        ("# --8<-- [start:one]\n# --8<-- [end:one]\n# --8<-- [start:one]\n", "starts twice"),
    ],
)
def test_bad_section_markers_are_named_with_their_line(tmp_path, monkeypatch, source, complaint):
    example = Example("demo/example")
    monkeypatch.setattr(Example, "source", source)
    with pytest.raises(ExampleError, match=complaint) as raised:
        _ = example.sections
    assert "examples/demo/example.py:" in str(raised.value)


def test_outputs_show_neither_the_harness_frames_nor_an_environment_path():
    traceback = (
        '  File "execdocs/run_example.py", line 149, in <module>\n'
        "    sys.exit(main())\n"
        '  File "examples/debugging/torch_logs.py", line 10, in <module>\n'
        "    f(x)\n"
        "V1122 07:55 .venv/lib/python3.11/site-packages/torch/_logging/_internal.py:1328] a record\n"
    )
    assert without_machine_paths(traceback) == (
        '  File "examples/debugging/torch_logs.py", line 10, in <module>\n'
        "    f(x)\n"
        "V1122 07:55 <site-packages>/torch/_logging/_internal.py:1328] a record\n"
    )


@pytest.mark.parametrize(
    ("declaration", "devices", "gpus"),
    [
        ("# execdocs: devices=cuda\n", ("cuda",), 1),
        ("# execdocs: devices=cuda, gpus=2\n", ("cuda",), 2),
        ("print('no declaration')\n", ("cpu", "cuda"), 1),
    ],
)
def test_an_example_declares_its_devices_and_how_many_gpus(monkeypatch, declaration, devices, gpus):
    monkeypatch.setattr(Example, "source", declaration)
    example = Example("demo/example")
    assert (example.devices, example.gpus) == (devices, gpus)


def test_an_example_declared_at_several_gpu_counts_is_one_example_per_count(monkeypatch):
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cuda, gpus=2,4\n")
    two, four = Example("demo/example"), Example("demo/example@4gpus")
    assert two.at_other_gpu_counts == [four]
    assert (two.gpus, four.gpus) == (2, 4)
    assert four.path == two.path and four.display_path == "examples/demo/example.py"
    assert four.described == "examples/demo/example.py at 4 GPUs"
    assert four.command == "RANKS=4 python examples/demo/example.py"
    assert "on a machine with 4 CUDA GPUs" in record_command(four, "cuda")
    assert "record -- demo/example@4gpus" in record_command(four, "cuda")


def test_a_gpu_count_the_example_does_not_declare_is_refused(monkeypatch):
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cuda, gpus=2,4\n")
    with pytest.raises(ExampleError, match=r"not recorded at 8 GPUs \(it declares gpus=2,4\)"):
        _ = Example("demo/example@8gpus").gpus


def test_several_gpus_need_the_gpu_alone(monkeypatch):
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cpu,cuda, gpus=2\n")
    with pytest.raises(ExampleError, match="gpus=2 needs devices=cuda alone"):
        _ = Example("demo/example").gpus


def test_the_link_between_gpus_is_read_from_nvidia_smi():
    matrix = (
        "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tNV18\t0-31\t0\t\tN/A\n"
        "GPU1\tNV18\t X \t0-31\t0\t\tN/A\n"
        "\nLegend:\n\n  X    = Self\n"
    )
    assert gpu_links(matrix, 2) == "NV18"
    assert gpu_links("", 2) == "unknown"


def test_a_stamp_of_several_gpus_names_them_the_link_and_nccl():
    stamp = {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0", "gpu": "NVIDIA H200",
             "date": "2026-11-26", "gpus": "2", "link": "NV18", "nccl": "2.28.9"}  # fmt: skip
    result = Result("demo/example", "cuda", "key", [], stamp)
    assert (
        stamp_line(result)
        == "2× H200 (NV18) · torch 2.11.0 · Python 3.12.3 · triton 3.6.0 · CUDA 13.0 · NCCL 2.28.9 · 2026-11-26"
    )
    assert recorded_title(result).startswith("Recorded on 2× NVIDIA H200 with torch 2.11.0")


def test_a_stamp_names_the_host_and_on_a_gpu_how_fast_it_launches():
    stamp = {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0", "gpu": "NVIDIA H100 80GB HBM3",
             "date": "2026-11-27", "host": "Intel(R) Xeon(R) Platinum 8480+, 16 cores"}  # fmt: skip
    cpu = Result("demo/example", "cpu", "key", [], {**stamp, "gpu": "none", "cuda": "none"})
    assert stamp_line(cpu).endswith("· host Intel(R) Xeon(R) Platinum 8480+, 16 cores · 2026-11-27")
    yardstick = {"host_small_op_us": "5.8", "host_small_compiled_call_us": "21.3"}
    gpu = Result("demo/example", "cuda", "key", [], {**stamp, **yardstick})
    assert stamp_line(gpu).endswith(
        "· host Intel(R) Xeon(R) Platinum 8480+, 16 cores "
        "(launches a small op in 5.8 µs, a small compiled call in 21.3 µs) · 2026-11-27"
    )


def test_a_gpu_result_whose_host_yardstick_fails_is_a_failure(monkeypatch):
    def failing(python):
        raise subprocess.CalledProcessError(1, ["python"], stderr="RuntimeError: no CUDA GPUs are available")

    monkeypatch.setattr(runner, "host_yardstick", failing)
    result = runner._with_host_yardstick(Result("demo/example", "cuda", "key", [], {}), "python")
    assert not result.ok and "the host yardstick (examples/host_yardstick.py) failed" in result.error["summary"]
    assert "no CUDA GPUs" in result.error["traceback"]


def test_record_refuses_an_example_that_needs_more_gpus_before_running_anything(monkeypatch):
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cuda, gpus=2\n")
    monkeypatch.setattr(record, "machine_gpus", lambda: 1)
    with pytest.raises(SystemExit) as refused:
        record.refuse_what_needs_more_gpus([Example("demo/example")], "cuda")
    assert str(refused.value) == (
        "not recorded: examples/demo/example.py needs 2 GPUs and this machine has 1; record it on a machine with "
        "that many GPUs, or leave it out of the targets. Nothing was run."
    )


def test_record_refuses_a_count_the_machine_lacks_naming_the_count(monkeypatch):
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cuda, gpus=2,4\n")
    monkeypatch.setattr(record, "machine_gpus", lambda: 2)
    record.refuse_what_needs_more_gpus([Example("demo/example")], "cuda")  # two: enough
    with pytest.raises(SystemExit, match="examples/demo/example.py at 4 GPUs needs 4 GPUs and this machine has 2"):
        record.refuse_what_needs_more_gpus([Example("demo/example"), Example("demo/example@4gpus")], "cuda")


def test_a_missing_recording_of_several_gpus_names_a_machine_with_that_many(monkeypatch):
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cuda, gpus=2\n")
    assert "on a machine with 2 CUDA GPUs" in record_command(Example("demo/example"), "cuda")


@pytest.mark.parametrize("compiler", ["clang++", "/opt/conda/bin/x86_64-conda-linux-gnu-c++"])
def test_record_refuses_another_compiler_before_running_anything(monkeypatch, compiler):
    monkeypatch.setenv("CXX", compiler)
    with pytest.raises(SystemExit, match=r"^not recorded: CXX is .* run `export CXX=g\+\+` and record again"):
        record.refuse_another_compiler()


@pytest.mark.parametrize("compiler", [None, "g++", "/usr/bin/g++-12"])
def test_record_accepts_g_plus_plus_or_no_cxx(monkeypatch, compiler):
    if compiler is None:
        monkeypatch.delenv("CXX", raising=False)
    else:
        monkeypatch.setenv("CXX", compiler)
    record.refuse_another_compiler()


def test_record_hands_over_each_examples_runs_before_the_next_example_starts(monkeypatch):
    """A recording cut short by a time limit keeps the pairs that finished: each example's runs reach `done`,
    which prints them and saves the pair's report, before the next example runs."""
    monkeypatch.setattr(Example, "source", "# execdocs: devices=cuda\n")
    events = []

    def run_twice(example, device):
        events.append(f"ran {example.name}")
        return [example.name, example.name]

    monkeypatch.setattr(runner, "run_twice", run_twice)
    examples = [Example("demo/first"), Example("demo/second")]
    runner.record_twice(examples, "cuda", lambda runs: events.append(f"done {runs[0]}"))
    assert events == ["ran demo/first", "done demo/first", "ran demo/second", "done demo/second"]
