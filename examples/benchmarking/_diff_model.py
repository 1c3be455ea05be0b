"""The profile diff for a model, whatever compiling it does: graph breaks split it into several graphs,
and a graph that fails to compile runs eagerly instead (Dynamo's `suppress_errors`), its error kept.
Either way the diff of what ran is printed, with how many graphs there were and how many compiled.

Import it from an example of this chapter (`import _diff_model`).
"""

import _profile_diff
import torch

WARM_UP_CALLS = 3


class FailureRecordingBackend(_profile_diff.InductorKeepingGraphs):
    """Inductor, keeping every graph Dynamo captured and the error of each one that failed to compile."""

    def __init__(self, mode: str = "default"):
        super().__init__(mode)
        self.failures: list[str] = []

    def __call__(self, graph_module, example_inputs):
        try:
            return super().__call__(graph_module, example_inputs)
        except Exception as error:
            self.failures.append(f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:120]}")
            raise  # Dynamo, with suppress_errors, runs this graph's code eagerly


# --8<-- [start:diff-model]
def diff_model(model, *args) -> dict:
    """Profile model(*args) eager and compiled, print the diff and the graphs; returns the counts, and the
    names of the ops (on a GPU, kernels) each side ran."""
    backend = FailureRecordingBackend()
    compiled_model = torch.compile(model, backend=backend)
    with torch._dynamo.config.patch(suppress_errors=True), torch.no_grad():
        for _ in range(WARM_UP_CALLS):  # the first compiles; after a failed compile, the next ones are slow too
            compiled_model(*args)
        eager = _profile_diff.profile_step(lambda: model(*args))
        compiled = _profile_diff.profile_step(lambda: compiled_model(*args))
    graphs, failed = len(backend.graphs), len(backend.failures)
    print(f"graphs captured: {graphs}, compiled: {graphs - failed}, run eagerly after a failed compile: {failed}")
    for failure in backend.failures:
        print("  compile failed:", failure)
    _profile_diff.print_diff(eager, compiled)
    return {
        "graphs": graphs,
        "failed": failed,
        "eager_ops": set(eager.by_kernel()),
        "compiled_ops": set(compiled.by_kernel()),
    }


# --8<-- [end:diff-model]
