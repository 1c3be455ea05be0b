"""The zoo's loop: every model measured with the harness, one line each, a failure never hiding the rest."""

import time

import _harness
import _zoo
import torch


# --8<-- [start:measure-model]
def measure_model(name: str, device: torch.device, *, train: bool, attention: str | None = None, batch=None,
                  **config_changes) -> dict:  # fmt: skip
    """One zoo model through the harness, eager against compiled; `attention`, `batch` and `config_changes`
    are the one thing an experiment changes (none for the zoo itself)."""
    model = _zoo.build(name, device, **config_changes)
    if attention:
        model.set_attn_implementation(attention)
    try:
        make_inputs = _zoo.input_maker(name, model, device, train=train, batch=batch)
        result = _harness.measure(model, make_inputs, train=train, mode="default", dtype=torch.bfloat16)
        params_m = sum(p.numel() for p in model.parameters()) / 1e6
        return {"name": name, "params_m": params_m, "attention": _zoo.attention_implementation(model), **result}
    finally:
        del model
        _harness.release()  # Dynamo's compiled code and the cached GPU memory, before the next model


# --8<-- [end:measure-model]


# --8<-- [start:run-zoo]
def run_zoo(names, device: torch.device, *, train: bool, budget_s: float, started: float) -> list[dict]:
    """Measure each model, one line per model as it goes.

    A model that fails is printed as FAILED and the others go on; once `budget_s` seconds have passed
    since `started`, no new model starts (the run must fit a time-limited job).
    """
    rows, skipped, failed = [], [], []
    for name in names:
        if time.perf_counter() - started > budget_s:
            skipped.append(name)
            continue
        try:
            row = measure_model(name, device, train=train)
        except Exception as error:  # one model that fails must not hide the others' results
            failed.append(name)
            message = (str(error).splitlines() or ["(no message)"])[0][:200]
            print(f"{name:<14} FAILED: {type(error).__name__}: {message}")
            continue
        rows.append(row)
        first = f"first loss {row['loss']:.3f}" if train else f"attention {row['attention']:<6}"
        print(f"{name:<14} {row['params_m']:6.1f} M parameters, {first} compiled in {row['compile_s']:5.1f} s, "
              f"{row['graphs']} graph(s), compiled output off by {row['relative_error']:.1e}")  # fmt: skip
        for reason in row["graph_breaks"]:
            print(f"{'':<14} graph break: {reason}")
    print("failed:", ", ".join(failed) or "none")
    print("skipped (time budget):", ", ".join(skipped) or "none")
    return rows


# --8<-- [end:run-zoo]
