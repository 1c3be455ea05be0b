"""What the pages of the Inductor chapter share: one compile with the Scheduler's logs kept, and
a reader for the node lists that `ir_pre_fusion` and `ir_post_fusion` print."""

import io
import logging
import re
from contextlib import ExitStack
from dataclasses import dataclass

import torch

import compile_tools

# A cache hit skips lowering and the Scheduler, and then they log nothing: always compile afresh.
torch._inductor.config.fx_graph_cache = False

NODE_LINE = re.compile(r"^(op\w+): (\w+)\(")


def scheduler_nodes(log: str) -> list[tuple[str, str]]:
    """The (name, kind) of each top-level node in an ir_pre_fusion or ir_post_fusion log.

    The post-fusion log prints the members of a fused node after a line `<name>.snodes[i] =`,
    in the same form as a top-level node; those lines are members, not nodes, and are skipped.
    """
    nodes, previous = [], ""
    for line in log.splitlines():
        match = NODE_LINE.match(line)
        if match and not re.search(r"\.snodes\[\d+\] =$", previous):
            nodes.append((match.group(1), match.group(2)))
        previous = line.rstrip()
    return nodes


@dataclass
class Compiled:
    wrapper: str  # the output code: the Python wrapper with the kernels embedded
    kernels: list[str]  # names of the generated kernels (Triton on GPU, C++ on CPU)
    pre_fusion: str  # what TORCH_LOGS=ir_pre_fusion prints
    post_fusion: str  # what TORCH_LOGS=ir_post_fusion prints
    fusion: str  # what TORCH_LOGS=fusion prints

    @property
    def nodes_before(self) -> list[tuple[str, str]]:
        return scheduler_nodes(self.pre_fusion)

    @property
    def nodes_after(self) -> list[tuple[str, str]]:
        return scheduler_nodes(self.post_fusion)

    def call(self) -> str:
        """The wrapper's call(): the kernels and library calls, in the order they run."""
        return compile_tools.lines_between(self.wrapper, "def call(", "return (")


def compile_and_log(fn, *args, **config) -> Compiled:
    """Compile fn afresh (Inductor options in `config`), run it once on args, keep code and logs."""
    from torch._logging._internal import log_registry

    torch._dynamo.reset()
    artifacts = ("ir_pre_fusion", "ir_post_fusion", "fusion")
    texts = {name: io.StringIO() for name in artifacts}
    with ExitStack() as stack:
        stack.enter_context(torch._inductor.config.patch(config))
        # captured_logs turns the three artifacts on; one more handler per artifact sorts their
        # records apart (an artifact's logger is named "<module>.__<artifact>").
        stack.enter_context(compile_tools.captured_logs(**dict.fromkeys(artifacts, True)))
        for name in artifacts:
            handler = logging.StreamHandler(texts[name])
            handler.setFormatter(logging.Formatter("%(message)s"))
            handler.addFilter(lambda record, name=name: record.name.endswith(f".__{name}"))
            for logger in map(logging.getLogger, log_registry.get_log_qnames()):
                logger.addHandler(handler)
                stack.callback(logger.removeHandler, handler)
        wrapper, *_ = compile_tools.generated_code(torch.compile(fn), *args)
    return Compiled(
        wrapper,
        compile_tools.kernel_names(wrapper),
        *(texts[name].getvalue() for name in artifacts),
    )
