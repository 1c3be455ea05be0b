"""Counting CUDA graphs: how many a compiled model captures and how many it replays, call by call.

Import it from an example (`from benchmarking._cuda_graphs import GraphCounter`), or copy it: it needs only torch.
"""

from collections import Counter

import torch


# --8<-- [start:count-graphs]
class GraphCounter:
    """Counts CUDA graphs captured and replayed, by wrapping torch.cuda.CUDAGraph's two methods."""

    def __init__(self):
        self.counts = Counter()
        self.capture_end, self.replay = torch.cuda.CUDAGraph.capture_end, torch.cuda.CUDAGraph.replay

    def __enter__(self):
        def capture_end(graph):
            self.counts["captured"] += 1
            return self.capture_end(graph)

        def replay(graph):
            self.counts["replayed"] += 1
            return self.replay(graph)

        torch.cuda.CUDAGraph.capture_end, torch.cuda.CUDAGraph.replay = capture_end, replay
        return self

    def __exit__(self, *exc):
        torch.cuda.CUDAGraph.capture_end, torch.cuda.CUDAGraph.replay = self.capture_end, self.replay


# --8<-- [end:count-graphs]
