"""Example scripts: discovery, named sections, the devices they run on, and their content key."""

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from execdocs.layout import DEVICES, EXAMPLES, ROOT

SECTION_MARKER = re.compile(r"^(?P<indent>[ \t]*)# --8<-- \[(?P<kind>start|end):(?P<name>[^\]]+)\][ \t]*$")
SECTION_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# An example runs on every device kind unless it says otherwise, e.g. `# execdocs: devices=cuda`; one that
# starts a process per GPU says how many it needs: `# execdocs: devices=cuda, gpus=2`. One that takes any number
# of ranks (from the RANKS variable) may list more counts, `gpus=2,4`: each further count is recorded as an
# example of its own, `<chapter>/<topic>@4gpus`, from the same file.
DEVICES_DECLARATION = re.compile(
    r"^# execdocs: devices=(?P<devices>[a-z,]+)(?:, gpus=(?P<gpus>\d+(?:,\d+)*))?[ \t]*$", re.M
)
AT_GPUS = re.compile(r"@(?P<gpus>\d+)gpus$")
RANKS_VARIABLE = "RANKS"  # how many ranks such an example starts; the first count it declares when unset


class ExampleError(Exception):
    """An example file that cannot be used as written; the message says what to change."""


@dataclass(frozen=True)
class Example:
    name: str  # "<chapter>/<topic>", the same name as its page and its block ids; "...@4gpus" at another count

    @property
    def file_name(self) -> str:
        """The name without a GPU count: the script's path under examples/, without .py."""
        return AT_GPUS.sub("", self.name)

    @property
    def path(self) -> Path:
        return EXAMPLES / f"{self.file_name}.py"

    @property
    def display_path(self) -> str:
        return f"examples/{self.file_name}.py"

    @property
    def described(self) -> str:
        """The script's path, and the GPU count when the name gives one: what messages and captions name."""
        return f"{self.display_path} at {self.gpus} GPUs" if AT_GPUS.search(self.name) else self.display_path

    @property
    def command(self) -> str:
        """How a reader runs it as this example runs."""
        ranks = f"{RANKS_VARIABLE}={self.gpus} " if AT_GPUS.search(self.name) else ""
        return f"{ranks}python {self.display_path}"

    @property
    def chapter(self) -> str:
        return self.name.split("/")[0]

    @cached_property
    def source(self) -> str:
        if not self.path.is_file():
            raise ExampleError(f"{self.display_path} does not exist: create it, or fix the name.")
        return self.path.read_text()

    @cached_property
    def devices(self) -> tuple[str, ...]:
        match = DEVICES_DECLARATION.search(self.source)
        if not match:
            return DEVICES
        devices = tuple(match["devices"].split(","))
        unknown = set(devices) - set(DEVICES)
        if unknown:
            raise ExampleError(f"{self.display_path}: unknown device kind(s) {sorted(unknown)}; use {DEVICES}.")
        return devices

    @cached_property
    def sections(self) -> dict[str, int]:
        """Each section's name and the line of its start marker, checked for pairing."""
        opened: dict[str, int] = {}
        closed: dict[str, int] = {}
        for lineno, line in enumerate(self.source.splitlines(), start=1):
            match = SECTION_MARKER.match(line)
            if not match:
                continue
            name, where = match["name"], f"{self.display_path}:{lineno}"
            if not SECTION_NAME.match(name):
                raise ExampleError(f"{where}: section name {name!r} must be lowercase words joined by hyphens.")
            if match["kind"] == "start":
                if name in opened:
                    raise ExampleError(f"{where}: section {name!r} starts twice; give it another name.")
                opened[name] = lineno
            else:
                if name not in opened or name in closed:
                    raise ExampleError(
                        f"{where}: section {name!r} ends without a start; add `# --8<-- [start:{name}]`."
                    )
                closed[name] = lineno
        for name, lineno in opened.items():
            if name not in closed:
                raise ExampleError(
                    f"{self.display_path}:{lineno}: section {name!r} never ends; add `# --8<-- [end:{name}]`."
                )
        return opened

    @property
    def is_support_module(self) -> bool:
        """A module examples import (its name starts with `_`): pages may include it, nothing runs it."""
        return self.path.name.startswith("_")

    @cached_property
    def declared_gpus(self) -> tuple[int, ...]:
        """The GPU counts the example declares it runs at, (1,) unless it declares some (one process per GPU)."""
        match = DEVICES_DECLARATION.search(self.source)
        counts = tuple(int(count) for count in match["gpus"].split(",")) if match and match["gpus"] else (1,)
        if max(counts) > 1 and self.devices != ("cuda",):
            raise ExampleError(f"{self.display_path}: gpus={match['gpus']} needs devices=cuda alone.")
        return counts

    @cached_property
    def gpus(self) -> int:
        """How many GPUs this run needs: the count in the name, or else the first one the example declares."""
        at = AT_GPUS.search(self.name)
        if not at:
            return self.declared_gpus[0]
        gpus = int(at["gpus"])
        if gpus not in self.declared_gpus[1:]:
            counts = ",".join(map(str, self.declared_gpus))
            raise ExampleError(
                f"{self.name}: {self.display_path} is not recorded at {gpus} GPUs (it declares gpus={counts}); "
                f"add {gpus} to its declaration, or name it without @{gpus}gpus."
            )
        return gpus

    @property
    def at_other_gpu_counts(self) -> list["Example"]:
        """The same script at each further GPU count it declares: examples of their own."""
        return [Example(f"{self.name}@{gpus}gpus") for gpus in self.declared_gpus[1:]]

    def runs_on(self, device: str) -> bool:
        return device in self.devices


def all_examples() -> list[Example]:
    """Every `examples/<chapter>/<topic>.py`, and each again at every further GPU count it declares; modules
    starting with `_` are support code, not examples."""
    scripts = [
        Example(str(path.relative_to(EXAMPLES).with_suffix("")))
        for path in sorted(EXAMPLES.glob("*/*.py"))
        if not path.name.startswith("_")
    ]
    return [example for script in scripts for example in (script, *script.at_other_gpu_counts)]


def content_key(files: list[str]) -> str:
    """A hash of the files (paths relative to the repository) whose content produced an output."""
    digest = hashlib.sha256()
    for relative_path in sorted(set(files)):
        digest.update(relative_path.encode() + b"\0")
        path = ROOT / relative_path
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()
