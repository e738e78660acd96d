"""Microseconds per ``update()``: every syncfree metric vs its torchmetrics twin, same inputs.

    python benchmarks/metric_update.py                 # CPU
    python benchmarks/metric_update.py --device cuda   # GPU (each timed loop ends with a sync)
    python benchmarks/metric_update.py --quick --out benchmarks/results/metric_update_cpu.txt

Method: for each pair, the same pre-generated batches (on ``--device``) are fed to both metrics;
after ``--warmup`` updates, ``--iters`` updates are timed with ``time.perf_counter`` (on CUDA the
loop is closed by one ``torch.cuda.synchronize()``, so the time includes the device work and,
for torchmetrics, its per-update host syncs).  The best of ``--repeats`` runs is reported.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time


def _pairs(num_classes: int):
    import torchmetrics
    import torchmetrics.classification as tmc
    import torchmetrics.regression as tmr

    import syncfree

    C = num_classes
    return [
        ("MeanMetric", syncfree.MeanMetric, torchmetrics.MeanMetric, {}, "values"),
        ("SumMetric", syncfree.SumMetric, torchmetrics.SumMetric, {}, "values"),
        ("MaxMetric", syncfree.MaxMetric, torchmetrics.MaxMetric, {}, "values"),
        ("MinMetric", syncfree.MinMetric, torchmetrics.MinMetric, {}, "values"),
        ("BinaryAccuracy", syncfree.BinaryAccuracy, tmc.BinaryAccuracy, {}, "binary"),
        ("BinaryPrecision", syncfree.BinaryPrecision, tmc.BinaryPrecision, {}, "binary"),
        ("BinaryRecall", syncfree.BinaryRecall, tmc.BinaryRecall, {}, "binary"),
        ("BinaryF1Score", syncfree.BinaryF1Score, tmc.BinaryF1Score, {}, "binary"),
        ("BinaryConfusionMatrix", syncfree.BinaryConfusionMatrix, tmc.BinaryConfusionMatrix, {},
         "binary"),
        ("MulticlassAccuracy", syncfree.MulticlassAccuracy, tmc.MulticlassAccuracy,
         {"num_classes": C}, "multiclass"),
        ("MulticlassPrecision", syncfree.MulticlassPrecision, tmc.MulticlassPrecision,
         {"num_classes": C}, "multiclass"),
        ("MulticlassRecall", syncfree.MulticlassRecall, tmc.MulticlassRecall,
         {"num_classes": C}, "multiclass"),
        ("MulticlassF1Score", syncfree.MulticlassF1Score, tmc.MulticlassF1Score,
         {"num_classes": C}, "multiclass"),
        ("MulticlassConfusionMatrix", syncfree.MulticlassConfusionMatrix,
         tmc.MulticlassConfusionMatrix, {"num_classes": C}, "multiclass"),
        ("MeanSquaredError", syncfree.MeanSquaredError, tmr.MeanSquaredError, {}, "regression"),
        ("MeanAbsoluteError", syncfree.MeanAbsoluteError, tmr.MeanAbsoluteError, {},
         "regression"),
    ]


def _batches(kind: str, n: int, batch: int, num_classes: int, device):
    import torch

    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        if kind == "values":
            args = (torch.randn(batch, generator=g),)
        elif kind == "binary":
            args = (torch.rand(batch, generator=g), torch.randint(0, 2, (batch,), generator=g))
        elif kind == "multiclass":
            args = (torch.randn(batch, num_classes, generator=g),
                    torch.randint(0, num_classes, (batch,), generator=g))
        else:
            args = (torch.randn(batch, generator=g), torch.randn(batch, generator=g))
        out.append(tuple(a.to(device) for a in args))
    return out


def _time_updates(metric, batches, warmup: int, iters: int, repeats: int, cuda: bool) -> float:
    import torch

    nb = len(batches)
    for i in range(warmup):
        metric.update(*batches[i % nb])
    if cuda:
        torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(iters):
            metric.update(*batches[i % nb])
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best / iters * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--batch", type=int, default=256, help="samples per update (256)")
    parser.add_argument("--num-classes", type=int, default=10, help="multiclass classes (10)")
    parser.add_argument("--iters", type=int, default=2000, help="timed updates per run (2000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed updates first (100)")
    parser.add_argument("--repeats", type=int, default=3, help="runs, best kept (3)")
    parser.add_argument("--quick", action="store_true", help="short run: 200 iters, 20 warm-up")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.iters, args.warmup, args.repeats = 200, 20, 2

    import torch
    import torchmetrics

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda and not torch.cuda.is_available():
        print("metric_update: --device cuda but CUDA is not available", file=sys.stderr)
        return 2

    if cuda:
        where = torch.cuda.get_device_name(device)
    else:
        where = f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"
    header = [
        f"syncfree vs torchmetrics: microseconds per update() on {device} ({where})",
        f"date {datetime.datetime.now().isoformat(timespec='seconds')}  "
        f"machine {platform.platform()}  python {platform.python_version()}",
        f"torch {torch.__version__}  torchmetrics {torchmetrics.__version__}  "
        f"batch {args.batch}  classes {args.num_classes}  iters {args.iters} x best of "
        f"{args.repeats} after {args.warmup} warm-up",
        "",
        f"{'metric':<28}{'syncfree us':>13}{'torchmetrics us':>17}{'tm / sf':>10}",
    ]
    lines = list(header)
    print("\n".join(header), flush=True)
    ratios = []
    for name, ours_cls, ref_cls, kwargs, kind in _pairs(args.num_classes):
        batches = _batches(kind, 8, args.batch, args.num_classes, device)
        ours = ours_cls(**kwargs).to(device)
        ref = ref_cls(**kwargs).to(device)
        t_ours = _time_updates(ours, batches, args.warmup, args.iters, args.repeats, cuda)
        t_ref = _time_updates(ref, batches, args.warmup, args.iters, args.repeats, cuda)
        ratio = t_ref / t_ours
        ratios.append(ratio)
        line = f"{name:<28}{t_ours:>13.1f}{t_ref:>17.1f}{ratio:>9.2f}x"
        lines.append(line)
        print(line, flush=True)
    geo = 1.0
    for r in ratios:
        geo *= r
    geo **= 1.0 / len(ratios)
    footer = ["", f"geometric mean of tm / sf: {geo:.2f}x  (above 1: syncfree is faster)"]
    lines += footer
    print("\n".join(footer))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
