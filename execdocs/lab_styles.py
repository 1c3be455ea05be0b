"""A lab page's inline <style> blocks, cut to the rules and custom properties its markup uses."""

import hashlib
import os
import re
from pathlib import Path

import tinycss2

from execdocs.layout import CACHE

# Pruning takes about a quarter of a second a page, at every build: a warm rebuild reads the result
# back instead, keyed by the page's HTML and this module's source.
PRUNED = CACHE / "lab-styles"

# mkdocs-jupyter inlines JupyterLab's whole stylesheet into every lab page: 575 KB of rules for the
# application's every widget, icon and editor, of which a rendered notebook uses a few dozen. Moved into
# one shared file, it would still be fetched and parsed, whole, before a reader's first lab is drawn;
# pruned, each page stays self-contained and light. A rule stays when one of its selectors names only
# classes and ids that the page's markup has; Material's own classes (md-*) count as present, since its
# template and scripts put them around the content. A custom property stays when a kept declaration, or
# the page, reads it, directly or through another one. What goes can match nothing on the page, or is
# never read, so the labs look as they did in both palettes; order, and so the cascade, is kept.
_STYLE = re.compile(r"(<style\b[^>]*>)(.*?)(</style>)", re.S | re.I)
_CLASSES = re.compile(r"""\bclass=(["'])(.*?)\1""", re.S)
_IDS = re.compile(r"""\bid=(["'])(.*?)\1""")
_VAR = re.compile(r"var\(\s*(--[\w-]+)")
_PRESENT = ("md-",)  # class prefixes that count as present: Material's, added by its template and scripts


def _can_match(selector, classes: set[str], ids: set[str]) -> bool:
    """Whether a complex selector's classes and ids are on the page (those inside :not() and the like aside)."""
    previous = None
    for token in selector:
        if token.type == "ident" and previous is not None and previous.type == "literal" and previous.value == ".":
            if token.value not in classes and not token.value.startswith(_PRESENT):
                return False
        elif token.type == "hash" and token.is_identifier and token.value not in ids:
            return False
        previous = token
    return True


def _prune_rules(rules, classes: set[str], ids: set[str]) -> list:
    """What can match: ("rule", selectors, declarations), ("group", "@media ...", rules), ("raw", css, None)."""
    kept = []
    for rule in rules:
        if rule.type == "qualified-rule":
            selectors, current = [], []
            for token in [*rule.prelude, None]:  # split at the top-level commas
                if token is None or (token.type == "literal" and token.value == ","):
                    if _can_match(current, classes, ids):
                        selectors.append(tinycss2.serialize(current).strip())
                    current = []
                else:
                    current.append(token)
            if not selectors:
                continue
            body = tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
            if all(item.type == "declaration" for item in body):
                kept.append(("rule", ",".join(selectors), body))
            else:  # nested rules or what the parser could not read: kept as written
                kept.append(("raw", ",".join(selectors) + "{" + tinycss2.serialize(rule.content) + "}", None))
        elif rule.type == "at-rule" and rule.lower_at_keyword in ("media", "supports") and rule.content is not None:
            inner = tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True)
            prelude = "@" + rule.at_keyword + tinycss2.serialize(rule.prelude)
            kept.append(("group", prelude, _prune_rules(inner, classes, ids)))
        elif rule.type == "at-rule" and rule.lower_at_keyword != "charset":  # @charset means nothing in <style>
            kept.append(("raw", tinycss2.serialize([rule]), None))
    return kept


def _read_properties(trees: list, page: str) -> set[str]:
    """The custom properties that the kept rules, or the page outside its styles, read, following var() chains."""
    values: dict[str, list[str]] = {}
    read = set(_VAR.findall(page))

    def walk(nodes):
        for kind, head, body in nodes:
            if kind == "group":
                walk(body)
            elif kind == "raw":
                read.update(_VAR.findall(head))
            else:
                for declaration in body:
                    value = tinycss2.serialize(declaration.value)
                    if declaration.name.startswith("--"):
                        values.setdefault(declaration.name, []).append(value)
                    else:
                        read.update(_VAR.findall(value))

    for tree in trees:
        walk(tree)
    pending = list(read)
    while pending:
        for value in values.get(pending.pop(), []):
            for name in _VAR.findall(value):
                if name not in read:
                    read.add(name)
                    pending.append(name)
    return read


def _serialize(nodes: list, read: set[str]) -> str:
    out = []
    for kind, head, body in nodes:
        if kind == "raw":
            out.append(head)
        elif kind == "group":
            if inner := _serialize(body, read):
                out.append(head + "{" + inner + "}")
        elif declarations := [d for d in body if not d.name.startswith("--") or d.name in read]:
            out.append(head + "{" + ";".join(d.serialize() for d in declarations) + "}")
    return "".join(out)


def prune_styles(html: str) -> str:
    """The lab page with each of its <style> blocks cut to the rules and custom properties its markup uses."""
    key = hashlib.sha256(Path(__file__).read_bytes() + b"\0" + html.encode())
    cached = PRUNED / f"{key.hexdigest()[:24]}.html"
    if cached.is_file():
        return cached.read_text()
    pruned = _pruned(html)
    PRUNED.mkdir(parents=True, exist_ok=True)
    scratch = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
    scratch.write_text(pruned)
    scratch.replace(cached)  # atomic: parallel builds never read half a file
    return pruned


def _pruned(html: str) -> str:
    blocks = list(_STYLE.finditer(html))
    outside = _STYLE.sub("", html)
    classes = {name for match in _CLASSES.finditer(outside) for name in match.group(2).split()}
    ids = {match.group(2) for match in _IDS.finditer(outside)}
    trees = [
        _prune_rules(tinycss2.parse_stylesheet(block.group(2), skip_comments=True, skip_whitespace=True), classes, ids)
        for block in blocks
    ]
    read = _read_properties(trees, outside)
    out, position = [], 0
    for block, tree in zip(blocks, trees, strict=True):
        out.append(html[position : block.start()])
        if css := _serialize(tree, read):
            out.append(block.group(1) + css + block.group(3))
        position = block.end()
    return "".join(out) + html[position:]
