"""A package that does not load: the same model packaged twice, its shared object linked with libstdc++
loaded at run time (g++'s default) and with a copy of libstdc++ inside it (the one change), each package
then loaded in a fresh Python process.

Run it as it is: `python examples/deploying/aoti_libstdcxx.py`. Linux only: it reads the shared objects
with readelf and nm.
"""

import tempfile
import zipfile
from pathlib import Path

import torch

import compile_tools
from deploying import _libstdcxx, _model, _serve

device = compile_tools.device()
workdir = Path(tempfile.mkdtemp(prefix="aoti-libstdcxx-"))  # packages and scripts: never inside the repository
model = _model.build(device)
x = torch.randn(8, 64, device=device)
exported = torch.export.export(model, (x,))

# --8<-- [start:experiment]
compilers = {"dynamic": "g++", "static": _libstdcxx.static_libstdcxx_compiler(workdir)}
results = {}
for linkage, compiler in compilers.items():
    # Inductor's caches off: each package is compiled and linked anew, by its own compiler
    with torch._inductor.config.patch({"cpp.cxx": (None, compiler), "force_disable_caches": True}):
        package = torch._inductor.aoti_compile_and_package(exported, package_path=str(workdir / f"{linkage}.pt2"))
    with zipfile.ZipFile(package) as archive:
        wrapper = workdir / f"{linkage}.so"
        wrapper.write_bytes(next(archive.read(name) for name in archive.namelist() if name.endswith(".so")))
    served, _, output = _serve.load_and_run(package, x, workdir)
    results[linkage] = result = {
        "needs_libstdcxx": _libstdcxx.needs_shared_libstdcxx(wrapper),
        "locale_symbols": _libstdcxx.locale_symbols_inside(wrapper),
        "error": served.get("error"),
        "output": output,
    }
    print(f"libstdc++ {linkage}: the .so needs libstdc++.so.6: {result['needs_libstdcxx']}; "
          f"std::locale symbols it defines itself: {result['locale_symbols']}")  # fmt: skip
    served_text = f"failed, {result['error']}" if result["error"] else "loaded, called, output returned"
    print("  in a fresh process:", served_text)
# --8<-- [end:experiment]
dynamic, static = results["dynamic"], results["static"]
assert dynamic["needs_libstdcxx"] and dynamic["locale_symbols"] == 0, "g++ links libstdc++ dynamically"
assert dynamic["error"] is None, f"the dynamically linked package runs: {dynamic['error']}"
torch.testing.assert_close(dynamic["output"], model(x))
assert not static["needs_libstdcxx"] and static["locale_symbols"] > 0, "the static .so has its own std::locale"
assert static["error"] is not None, "the package with its own libstdc++ does not load"
