"""The GPU activities a function runs, timed by torch.profiler: for the examples of this chapter
that time kernels one by one rather than a whole call."""

import torch


def gpu_events_us(fn, calls: int) -> list[tuple[str, float]]:
    """(name, microseconds) of every GPU activity (kernel, copy) of `calls` calls of fn(), back to
    back under the profiler, after one warm-up call."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    gpu = torch.autograd.DeviceType.CUDA
    return [(event.name, event.time_range.elapsed_us()) for event in prof.events() if event.device_type == gpu]
