"""What TORCHINDUCTOR_VEC_ISA_OK=0, the setting that spares aoti_load_package its ISA probe, does to a process
that also compiles for the CPU: Inductor's C++ kernels lose their vector instructions.

Run it as it is: `python examples/deploying/isa_setting.py`. CPU only: the setting is about Inductor's C++ kernels.
"""
# execdocs: devices=cpu

import os
import subprocess
import sys
import tempfile

from deploying import _serve

# --8<-- [start:vectorized]
# A fresh process compiles a row sum for the CPU and counts the vector type in the C++ Inductor wrote.
COMPILE = """
import torch
from torch._inductor.utils import run_and_get_code
_, sources = run_and_get_code(torch.compile(lambda x: (2 * x).relu().sum(dim=1)), torch.randn(64, 1024))
print(sum(source.count("at::vec::Vectorized") for source in sources))
"""
without_setting = {name: value for name, value in os.environ.items() if name != _serve.ISA_SETTING}
vector_uses = {}
for label, setting in (("as torch compiles", {}), (f"{_serve.ISA_SETTING}=0", _serve.SKIP_ISA_PROBES)):
    with tempfile.TemporaryDirectory() as empty_cache:  # nothing compiled under the other setting is reused
        env = {**without_setting, **setting, "TORCHINDUCTOR_CACHE_DIR": empty_cache}
        done = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, check=True)
    vector_uses[label] = int(done.stdout.split()[-1])
    print(f"{label}: at::vec::Vectorized appears {vector_uses[label]} times in the generated C++")
# --8<-- [end:vectorized]
assert vector_uses["as torch compiles"] > 0, "by default the C++ kernels are vectorized"
assert vector_uses[f"{_serve.ISA_SETTING}=0"] == 0, "with the setting, Inductor writes scalar loops"
