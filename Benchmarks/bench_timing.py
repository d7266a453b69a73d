"""Timing shared by the peer benchmarks (ncnn_bench.py, ort_bench.py): warm-up calls, timed
calls, and the JSON fields every peer reports the same way."""
import statistics


def time_calls(once, warmup, runs):
    """Calls `once()` (returning (seconds, output)) `warmup` then `runs` times: (warm-up
    seconds, run seconds, the last output)."""
    warm, timed, out = [], [], None
    for _ in range(warmup):
        dt, out = once()
        warm.append(dt)
    for _ in range(runs):
        dt, out = once()
        timed.append(dt)
    return warm, timed, out


def timing_fields(warm, runs, load_s):
    """The timing part of a peer's JSON line."""
    return {
        "median_s": round(statistics.median(runs), 6),
        "runs": [round(r, 6) for r in runs],
        "warmup_s": [round(w, 6) for w in warm],
        "load_s": round(load_s, 6),
        "min_s": round(min(runs), 6),
    }
