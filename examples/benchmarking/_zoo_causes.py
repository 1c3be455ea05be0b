"""The zoo's outliers: which models fall outside the expected band, and the printed evidence of each
experiment that tests a cause (one thing changed, the model measured again)."""

import _harness
import _unpadded  # noqa: F401  registers "sdpa_unpadded": SDPA with no mask built for unpadded batches
import _zoo_run

BAND = (1.2, 3.0)  # speedups outside it get a cause on the page, tested by an experiment
FP32_GEMM, BF16_GEMM, ELEMENTWISE = "GEMM/conv (fp32)", "GEMM/conv (bf16)", "ATen elementwise/copy/norm"
# The models whose compiled attention runs on SDPA's math path, because transformers builds a mask under compile
MASKED = ("BERT-base", "DistilBERT", "ViT-B/16")


def outliers(rows: list[dict]) -> list[dict]:
    low, high = BAND
    found = [r for r in rows if not low <= r["speedup"] <= high]
    print(f"outside {low}x-{high}x: " + (", ".join(f"{r['name']} {r['speedup']:.2f}x" for r in found) or "none"))
    return found


def gpu_ms(r: dict, side: str, category: str) -> float:
    """GPU ms per call of one category of kernels (see _profile_diff.classify), 0 where there is none."""
    return r[f"{side}_categories"].get(category, 0.0)


# --8<-- [start:print-change]
def print_change(label: str, base: dict, changed: dict, categories: list[str]) -> None:
    """The zoo's measurement and the experiment's, side by side: the paired speedup with its spread, the GPU's
    busy time of each side (which the host's speed does not move), and the categories the cause names."""
    print(label)
    for tag, r in (("as in the zoo", base), ("changed", changed)):
        low, high = r["speedup_range"]
        shown = ", ".join(f"{c} {gpu_ms(r, 'eager', c):.2f}/{gpu_ms(r, 'compiled', c):.2f}" for c in categories)
        print(f"  {tag:<14}{r['speedup']:.2f}x ({low:.2f}-{high:.2f}); GPU busy eager {r['eager_busy_ms']:.2f}, "
              f"compiled {r['compiled_busy_ms']:.2f} ms, GPU work {_harness.gpu_work_ratio(r):.2f}x; "
              f"GPU ms eager/compiled: {shown}")  # fmt: skip


# --8<-- [end:print-change]


# --8<-- [start:print-launches]
def print_launches(r: dict) -> dict:
    """The launch experiment: the same two steps, replayed from CUDA graphs (no Python, no per-kernel launch
    from the CPU). Prints the times, and returns the speedups it implies, for the caller's prediction."""
    eager_graph, compiled_graph = r["eager_graph_ms"], r["compiled_graph_ms"]
    print(f"{r['name']}: eager {r['eager_ms']:.2f} ms ({r['eager_bound']}, host {r['eager_host_ms']:.2f} ms), "
          f"compiled {r['compiled_ms']:.2f} ms ({r['compiled_bound']}, host {r['compiled_host_ms']:.2f} ms), "
          f"{r['speedup']:.2f}x")  # fmt: skip
    for side, ms in (("eager", eager_graph), ("compiled", compiled_graph)):
        shown = f"{ms:.2f} ms" if ms else r[f"{side}_graph_note"]
        print(f"  {side} step from a CUDA graph: {shown} (its GPU busy time {r[f'{side}_busy_ms']:.2f} ms)")
    speedups = {
        "compiled graph over eager": r["eager_ms"] / compiled_graph if compiled_graph else None,
        "both from graphs": eager_graph / compiled_graph if eager_graph and compiled_graph else None,
    }
    print("  " + ", ".join(f"{key}: {value:.2f}x" for key, value in speedups.items() if value))
    return speedups


# --8<-- [end:print-launches]


def check_launch_cause(r: dict, speedups: dict) -> None:
    """Launches are the cause when the side that is slow leaves the GPU idle, and graphs move the speedup into the band.

    Above the band: an eager call that leaves the GPU idle while Python launches its kernels; with both
    sides replayed from CUDA graphs, the speedup falls into the band. Below it: a host-bound compiled
    call; replayed from a CUDA graph, it beats eager by more than the band's floor.
    """
    low, high = BAND
    if r["speedup"] > high:
        assert _harness.host_share(r, "eager") > 0.4, f"{r['name']}: eager is not launch-bound"
        both = speedups["both from graphs"]
        assert both and both < high, f"{r['name']}: {both}x with both sides from graphs"
    else:
        assert _harness.host_share(r, "compiled") > 0.4, f"{r['name']}: the compiled call is not host-bound"
        graphed = speedups["compiled graph over eager"]
        assert graphed and graphed > low, f"{r['name']}: {graphed}x from a CUDA graph"
        assert r["compiled_graph_ms"] < 1.3 * r["compiled_busy_ms"], f"{r['name']}: from a graph, about its GPU time"


# --8<-- [start:mask-experiment]
def mask_experiment(base: dict, device, *, train: bool) -> dict:
    """The same model with SDPA and no mask built ("sdpa_unpadded"): the one thing changed. Prints both runs,
    and eager's step replayed from a CUDA graph, which transformers captures as it traces: with the mask."""
    fixed = _zoo_run.measure_model(base["name"], device, train=train, attention="sdpa_unpadded")
    attention = sorted(k for k in fixed["compiled_categories"] if k.startswith("attention"))
    print_change(f"{base['name']}: no attention mask built under compile", base, fixed, [FP32_GEMM, *attention])
    print(f"  compiled GPU busy {base['compiled_busy_ms']:.2f} -> {fixed['compiled_busy_ms']:.2f} ms")
    for tag, r in (("as in the zoo", base), ("changed", fixed)):
        print(f"  eager step replayed from a CUDA graph, {tag}: GPU busy {r['eager_graph_busy_ms']:.2f} ms "
              f"against {r['eager_busy_ms']:.2f} ms stepped")  # fmt: skip
    return fixed


# --8<-- [end:mask-experiment]


def check_mask_signature(r: dict) -> None:
    """The mask's signature in a profile: fp32 GEMMs in the compiled call, none in eager's."""
    name = r["name"]
    assert gpu_ms(r, "compiled", FP32_GEMM) > 0.5 and gpu_ms(r, "eager", FP32_GEMM) == 0, f"{name}: signature"


def check_mask_cause(base: dict, fixed: dict) -> None:
    """The mask is the cause when its signature goes with it, the fused attention comes back, and the compiled
    GPU work falls below eager's: GPU times, which the host's speed does not move.

    Eager's CUDA-graph replay runs the mask too (transformers treats capturing as tracing): its GPU work
    is larger than the step's with the mask, and about the step's without it."""
    name = base["name"]
    check_mask_signature(base)
    fused = [k for k in fixed["compiled_categories"] if k.startswith("attention")]
    assert fused and gpu_ms(fixed, "compiled", FP32_GEMM) == 0, f"{name}: the fused attention is back"
    assert _harness.gpu_work_ratio(fixed) > 1.0, f"{name}: GPU work {_harness.gpu_work_ratio(fixed):.2f}x, mask gone"
    assert base["eager_graph_busy_ms"] > 1.3 * base["eager_busy_ms"], f"{name}: eager's replay runs the mask"
    assert fixed["eager_graph_busy_ms"] < 1.1 * fixed["eager_busy_ms"], f"{name}: without it, eager's replay is eager"
