"""Reading the folder that TORCH_COMPILE_DEBUG=1 writes: the model's source line behind each node of a graph file.

Import it from an example of this chapter: `from debugging._debug_folder import source_lines`.
"""

import re
from pathlib import Path

from debugging._llama import in_package

# --8<-- [start:source-lines]
FILE_COMMENT = re.compile(r"^\s*# File: (\S+?):(\d+) in (\w+), code: (.*)$")
NODE_LINE = re.compile(r"^\s+(\w+): \"")


def source_lines(graph_file: Path) -> dict[str, tuple[str, str]]:
    """Each node of a readable graph file, with the '# File: path:line in function, code: ...' above it:
    the stack trace Dynamo recorded in the node's meta, as the debug folder prints it."""
    lines, where = {}, None
    for line in graph_file.read_text().splitlines():
        if match := FILE_COMMENT.match(line):
            path, number, function, source = match.groups()
            where = (f"{in_package(path)}:{number} in {function}", source.strip())
        elif (match := NODE_LINE.match(line)) and where:
            lines[match.group(1)] = where
    return lines


# --8<-- [end:source-lines]
