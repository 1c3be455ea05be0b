#!/usr/bin/env bash
# The GPU image's set-up: the docs stack on top of the image's own CUDA build of torch.
# The Dockerfile runs it after FROM; a bare GPU machine runs the same script, so what the image
# does is exercised even where Docker can't run. Without network, set WHEELS to a folder of wheels.
#   usage: docker/setup-image.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -c 'import torch; assert torch.version.cuda, "this script expects an image with a CUDA build of torch"'

# The pinned docs, test and models groups from pyproject.toml, plus nox; never torch, which the image owns.
requirements=$(mktemp)
python3 - "$requirements" <<'PY'
import sys, tomllib
groups = tomllib.load(open("pyproject.toml", "rb"))["dependency-groups"]
pins = groups["docs"] + groups["test"] + groups["models"] + ["nox==2026.10.20", "filelock==4.2.11"]
open(sys.argv[1], "w").write("\n".join(pins) + "\n")
PY
if [ -n "${WHEELS:-}" ]; then
  # Carried wheels are exactly what the image lacks; the image's own packages stay as they are.
  python3 -m pip install -q --no-index --no-deps "$WHEELS"/*.whl
else
  python3 -m pip install -q -r "$requirements"
fi

# What an editable install of the project does: the repository and examples/ on sys.path.
site_packages=$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
printf '%s\n%s\n' "$PWD" "$PWD/examples" > "$site_packages/torch_compile_inside.pth"

# Mermaid for offline diagrams, fetched once from npm. With network (the image build), install
# Node.js for that; without (a bare GPU machine), .cache/vendor must be carried in.
if [ -z "${WHEELS:-}" ] && ! command -v npm >/dev/null; then
  apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
fi
if command -v npm >/dev/null; then
  python3 -m execdocs.vendor
else
  test -f .cache/vendor/mermaid/mermaid.esm.min.mjs || { echo "no npm and no .cache/vendor/mermaid/" >&2; exit 1; }
fi
python3 -c 'import execdocs, compile_tools, mkdocs, sybil, nox; print("docs stack ready")'
