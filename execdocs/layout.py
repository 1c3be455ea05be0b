"""Where things live in the repository, in one place."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
SNIPPETS = ROOT / "snippets"
# Committed outputs, one folder per device kind: outputs/<device>/<chapter>/<topic>.json
OUTPUTS = SNIPPETS / "outputs"
# What `record --twice` found when it ran each example twice: reproduction/<device>/<chapter>/<topic>.json
REPRODUCTION = SNIPPETS / "reproduction"
# The drift run's verdicts, one file per torch release and one for its control: drift/<release>.json
DRIFT = SNIPPETS / "drift"
CACHE = ROOT / ".cache"
VENDOR = CACHE / "vendor"
INDUCTOR_CACHE = CACHE / "inductor"
LOCKS = CACHE / "locks"

DEVICES = ("cpu", "cuda")

# A test run writes every example's fresh result here instead of into OUTPUTS, so that the
# build and sybil in that same run reuse them and no example runs twice.
RUN_DIR_ENV = "EXECDOCS_RUN_DIR"


def run_dir() -> Path | None:
    value = os.environ.get(RUN_DIR_ENV)
    return Path(value) if value else None


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
