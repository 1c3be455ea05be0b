"""Where Inductor's output code issues each all-reduce, and where it waits for it.

Import it from an example of this chapter: `from distributed import _collectives_in_code`.
"""

import re

ALL_REDUCE = "torch.ops._c10d_functional.all_reduce_.default("
WAIT = "torch.ops._c10d_functional.wait_tensor.default("
# A kernel the output code runs: an extern kernel (a matrix product), a C++ kernel on the CPU, a Triton one on a GPU
KERNEL_CALL = re.compile(r"^\s+(extern_kernels\.\w+|cpp_fused_\w+|triton_\w+\.run)\(")


# --8<-- [start:collectives]
def collectives(output_code: str) -> dict:
    """The all-reduces in Inductor's code of a graph, and the kernels run between each and its wait."""
    lines = output_code.splitlines()
    issued = [i for i, line in enumerate(lines) if ALL_REDUCE in line]
    between = []
    for i in issued:
        buffer = lines[i].split(ALL_REDUCE)[1].split(",")[0]
        wait = next(j for j in range(i, len(lines)) if f"{WAIT}{buffer})" in lines[j])
        between.append(sum(bool(KERNEL_CALL.match(line)) for line in lines[i:wait]))
    return {"all_reduces": len(issued), "kernels_before_wait": between}


# --8<-- [end:collectives]


def with_all_reduces(output_code_log: str) -> list[str]:
    """The output code of each graph, from a TORCH_LOGS=output_code log, that issues an all-reduce."""
    return [part for part in output_code_log.split("Output code:") if ALL_REDUCE in part]
