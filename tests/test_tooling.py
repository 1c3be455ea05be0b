"""The small parsers the pipeline rests on."""

import pytest

from execdocs.examples import Example, ExampleError
from execdocs.markdown_blocks import blocks
from execdocs.pages import include_target, page_references
from execdocs.run_example import with_section_switches, without_machine_paths

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
