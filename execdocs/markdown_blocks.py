"""Fenced code blocks of a Markdown page, with their markdown-exec style attributes."""

import re
from dataclasses import dataclass, field

OPENING = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)(?P<rest>[^\n]*)$")
ATTRIBUTE = re.compile(r'(?P<key>[\w-]+)="(?P<value>[^"]*)"')
INCLUDE = re.compile(r'^[ \t]*--8<--[ \t]+"(?P<target>[^"]+)"[ \t]*$', re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    attrs: dict[str, str] = field(hash=False)
    body: str  # the block's text, with the fence's indentation removed
    line: int  # line of the opening fence, from 1
    start: int  # character offsets of the whole block, fences included
    end: int

    @property
    def executed(self) -> bool:
        return self.attrs.get("exec", "").lower() in {"1", "on", "true", "yes"}

    @property
    def includes(self) -> list[str]:
        """The `--8<-- "file:section"` targets in the block, as pymdownx.snippets sees them."""
        return [match["target"] for match in INCLUDE.finditer(self.body)]


def blocks(text: str) -> list[Block]:
    found = []
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    index = 0
    while index < len(lines):
        opening = OPENING.match(lines[index].rstrip("\n"))
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end].rstrip("\n")):
            end += 1
        body = "".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[index + 1 : end])
        attrs = {match["key"]: match["value"] for match in ATTRIBUTE.finditer(opening["rest"])}
        found.append(Block(opening["lang"], attrs, body, index + 1, offsets[index], offsets[min(end + 1, len(lines))]))
        index = end + 1
    return found
