"""How a shared object gets its C++ standard library: loaded from libstdc++.so.6 when it runs (dynamic),
or copied into the object when it is linked (static). Linux tools only (readelf and nm, from binutils).

Import it from an example of this chapter: `from deploying import _libstdcxx`.
"""

import subprocess
from pathlib import Path


# --8<-- [start:linkage]
def needs_shared_libstdcxx(shared_object: Path) -> bool:
    """Whether the object lists libstdc++.so.6 among the libraries it needs when it is loaded."""
    dynamic_section = subprocess.run(["readelf", "-d", str(shared_object)], capture_output=True, text=True, check=True)
    return any("NEEDED" in line and "libstdc++" in line for line in dynamic_section.stdout.splitlines())


def locale_symbols_inside(shared_object: Path) -> int:
    """How many of std::locale's functions and data the object defines itself (a static copy defines them)."""
    symbols = subprocess.run(["nm", "-D", "-C", "--defined-only", str(shared_object)],
                             capture_output=True, text=True, check=True)  # fmt: skip
    return sum("std::locale::" in line for line in symbols.stdout.splitlines())


def static_libstdcxx_compiler(folder: Path) -> str:
    """A g++ that links libstdc++ statically into every shared object it makes: the one change of the experiment."""
    script = folder / "g++-static-libstdc++"
    linking = 'case " $* " in *" -shared "*) exec g++ "$@" -static-libstdc++ ;; esac\n'
    script.write_text(f'#!/bin/sh\n{linking}exec g++ "$@"\n')
    script.chmod(0o755)
    return str(script)


# --8<-- [end:linkage]
