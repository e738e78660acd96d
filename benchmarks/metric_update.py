"""Microseconds per ``update()``: every syncfree metric vs its torchmetrics twin, same inputs.

    python benchmarks/metric_update.py                 # CPU
    python benchmarks/metric_update.py --device cuda   # GPU (each timed loop ends with a sync)
    python benchmarks/metric_update.py --quick --out benchmarks/results/metric_update_cpu.txt
    python benchmarks/metric_update.py --threads 1     # a loaded shared CPU (see --threads)

Method: for each pair, the same pre-generated batches (on ``--device``) are fed to both metrics;
after ``--warmup`` updates, ``--iters`` updates are timed with ``time.perf_counter`` (on CUDA the
loop is closed by one ``torch.cuda.synchronize()``, so the time includes the device work and,
for torchmetrics, its per-update host syncs).  The best of ``--repeats`` runs is reported; the
runs of the two libraries alternate, so that load from other processes hits both alike.
"""

from __future__ import annotations

import argparse
import os
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
        # ---- metrics added later ----
        ("MeanAbsolutePercentageError", syncfree.MeanAbsolutePercentageError,
         tmr.MeanAbsolutePercentageError, {}, "regression"),
        ("R2Score", syncfree.R2Score, tmr.R2Score, {}, "regression"),
        ("Perplexity (8x32, vocab 1000)", syncfree.Perplexity, torchmetrics.text.Perplexity,
         {"ignore_index": -100}, "lm"),
        ("BinarySpecificity", syncfree.BinarySpecificity, tmc.BinarySpecificity, {}, "binary"),
        ("BinaryFBetaScore", syncfree.BinaryFBetaScore, tmc.BinaryFBetaScore, {"beta": 2.0}, "binary"),
        ("BinaryStatScores", syncfree.BinaryStatScores, tmc.BinaryStatScores, {}, "binary"),
        ("BinaryJaccardIndex", syncfree.BinaryJaccardIndex, tmc.BinaryJaccardIndex, {}, "binary"),
        ("MulticlassSpecificity", syncfree.MulticlassSpecificity, tmc.MulticlassSpecificity,
         {"num_classes": C}, "multiclass"),
        ("MulticlassFBetaScore", syncfree.MulticlassFBetaScore, tmc.MulticlassFBetaScore,
         {"beta": 2.0, "num_classes": C}, "multiclass"),
        ("MulticlassStatScores", syncfree.MulticlassStatScores, tmc.MulticlassStatScores,
         {"num_classes": C}, "multiclass"),
        ("MulticlassJaccardIndex", syncfree.MulticlassJaccardIndex, tmc.MulticlassJaccardIndex,
         {"num_classes": C}, "multiclass"),
        ("MultilabelAccuracy", syncfree.MultilabelAccuracy, tmc.MultilabelAccuracy,
         {"num_labels": C}, "multilabel"),
        ("MultilabelPrecision", syncfree.MultilabelPrecision, tmc.MultilabelPrecision,
         {"num_labels": C}, "multilabel"),
        ("MultilabelRecall", syncfree.MultilabelRecall, tmc.MultilabelRecall,
         {"num_labels": C}, "multilabel"),
        ("MultilabelF1Score", syncfree.MultilabelF1Score, tmc.MultilabelF1Score,
         {"num_labels": C}, "multilabel"),
        ("BinaryROC (100 thr)", syncfree.BinaryROC, tmc.BinaryROC, {"thresholds": 100}, "binary"),
        ("BinaryPRCurve (100 thr)", syncfree.BinaryPrecisionRecallCurve,
         tmc.BinaryPrecisionRecallCurve, {"thresholds": 100}, "binary"),
        ("BinaryAUROC (100 thr)", syncfree.BinaryAUROC, tmc.BinaryAUROC, {"thresholds": 100},
         "binary"),
        ("BinaryAvgPrecision (100 thr)", syncfree.BinaryAveragePrecision,
         tmc.BinaryAveragePrecision, {"thresholds": 100}, "binary"),
        # ---- issue 23 ----
        ("MultilabelConfusionMatrix", syncfree.MultilabelConfusionMatrix, tmc.MultilabelConfusionMatrix,
         {"num_labels": C}, "multilabel"),
        ("MulticlassAUROC (100 thr)", syncfree.MulticlassAUROC, tmc.MulticlassAUROC,
         {"num_classes": C, "thresholds": 100}, "multiclass"),
        ("MulticlassAvgPrecision (100 thr)", syncfree.MulticlassAveragePrecision, tmc.MulticlassAveragePrecision,
         {"num_classes": C, "thresholds": 100}, "multiclass"),
        ("MulticlassROC (100 thr)", syncfree.MulticlassROC, tmc.MulticlassROC,
         {"num_classes": C, "thresholds": 100}, "multiclass"),
        ("MulticlassPRCurve (100 thr)", syncfree.MulticlassPrecisionRecallCurve, tmc.MulticlassPrecisionRecallCurve,
         {"num_classes": C, "thresholds": 100}, "multiclass"),
        ("MultilabelAUROC (100 thr)", syncfree.MultilabelAUROC, tmc.MultilabelAUROC,
         {"num_labels": C, "thresholds": 100}, "multilabel"),
        ("MultilabelAvgPrecision (100 thr)", syncfree.MultilabelAveragePrecision, tmc.MultilabelAveragePrecision,
         {"num_labels": C, "thresholds": 100}, "multilabel"),
        ("MultilabelROC (100 thr)", syncfree.MultilabelROC, tmc.MultilabelROC,
         {"num_labels": C, "thresholds": 100}, "multilabel"),
        ("MultilabelPRCurve (100 thr)", syncfree.MultilabelPrecisionRecallCurve, tmc.MultilabelPrecisionRecallCurve,
         {"num_labels": C, "thresholds": 100}, "multilabel"),
        # ---- exact curves (thresholds=None: a sample buffer here, growing lists in torchmetrics) ----
        ("BinaryAUROC (exact)", syncfree.BinaryAUROC, tmc.BinaryAUROC, {"thresholds": None}, "binary"),
        ("MulticlassAUROC (exact)", syncfree.MulticlassAUROC, tmc.MulticlassAUROC,
         {"num_classes": C, "thresholds": None}, "multiclass"),
        ("BinaryROC (exact)", syncfree.BinaryROC, tmc.BinaryROC, {"thresholds": None}, "binary"),
        ("MultilabelPRCurve (exact)", syncfree.MultilabelPrecisionRecallCurve, tmc.MultilabelPrecisionRecallCurve,
         {"num_labels": C, "thresholds": None}, "multilabel"),
        ("Acc+P+R+F1 collection, 10 cls", _collection(syncfree, 10), _collection(torchmetrics, 10),
         {}, "multiclass:10"),
        ("Acc+P+R+F1 collection, 1000 cls", _collection(syncfree, 1000),
         _collection(torchmetrics, 1000), {}, "multiclass:1000"),
    ]


def _collection(lib, num_classes: int):
    """A factory of MetricCollection([Accuracy, Precision, Recall, F1Score]) (multiclass, macro)
    of ``lib`` (syncfree or torchmetrics, each with its default compute groups)."""
    def make():
        kw = {"task": "multiclass", "num_classes": num_classes, "average": "macro"}
        return lib.MetricCollection([lib.Accuracy(**kw), lib.Precision(**kw), lib.Recall(**kw),
                                     lib.F1Score(**kw)])
    return make


def _batches(kind: str, n: int, batch: int, num_classes: int, device):
    import torch

    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        if kind == "values":
            args = (torch.randn(batch, generator=g),)
        elif kind == "binary":
            args = (torch.rand(batch, generator=g), torch.randint(0, 2, (batch,), generator=g))
        elif kind.startswith("multiclass"):
            c = int(kind.split(":")[1]) if ":" in kind else num_classes
            args = (torch.randn(batch, c, generator=g), torch.randint(0, c, (batch,), generator=g))
        elif kind == "multilabel":
            args = (torch.randn(batch, num_classes, generator=g),
                    torch.randint(0, 2, (batch, num_classes), generator=g))
        elif kind == "lm":  # (8 sequences, 32 tokens, vocabulary 1000); 10% of targets ignored
            target = torch.randint(0, 1000, (8, 32), generator=g)
            target[:, ::10] = -100
            args = (torch.randn(8, 32, 1000, generator=g), target)
        else:
            args = (torch.randn(batch, generator=g), torch.randn(batch, generator=g))
        out.append(tuple(a.to(device) for a in args))
    return out


def _run(metric, batches, iters: int, cuda: bool) -> float:
    """Seconds for ``iters`` updates."""
    import torch

    nb = len(batches)
    start = time.perf_counter()
    for i in range(iters):
        metric.update(*batches[i % nb])
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def _time_pair(ours, ref, batches, warmup: int, iters: int, repeats: int, cuda: bool):
    """Best µs per update of ``ours`` and ``ref``, their timed runs interleaved (ours, ref, ours, ...)
    so that a change of load on a shared machine hits both alike."""
    _run(ours, batches, warmup, cuda)
    _run(ref, batches, warmup, cuda)
    best_ours = best_ref = float("inf")
    for _ in range(repeats):
        best_ours = min(best_ours, _run(ours, batches, iters, cuda))
        best_ref = min(best_ref, _run(ref, batches, iters, cuda))
    return best_ours / iters * 1e6, best_ref / iters * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--batch", type=int, default=256, help="samples per update (256)")
    parser.add_argument("--num-classes", type=int, default=10, help="multiclass classes (10)")
    parser.add_argument("--iters", type=int, default=2000, help="timed updates per run (2000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed updates first (100)")
    parser.add_argument("--repeats", type=int, default=5, help="runs, best kept (5)")
    parser.add_argument("--quick", action="store_true", help="short run: 200 iters, 20 warm-up")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--note", help="a line added to the report (e.g. the machine's load)")
    parser.add_argument("--only", help="run only the rows whose name contains this text")
    parser.add_argument("--threads", type=int, help="torch intra-op threads for both libraries (default: "
                        "torch's). 1 on a loaded shared CPU: a 2-thread op then waits for a descheduled "
                        "worker, which moves single rows by 10x between runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.iters, args.warmup, args.repeats = 200, 20, 2

    import torch
    import torchmetrics

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda and not torch.cuda.is_available():
        print("metric_update: --device cuda but CUDA is not available", file=sys.stderr)
        return 2

    if cuda:
        where = torch.cuda.get_device_name(device)
    else:
        where = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                 f"{torch.get_num_threads()} threads")
    header = [
        f"syncfree vs torchmetrics: microseconds per update() on {device} ({where})",
        f"date {datetime.datetime.now().isoformat(timespec='seconds')}  "
        f"machine {platform.platform()}  python {platform.python_version()}",
        f"torch {torch.__version__}  torchmetrics {torchmetrics.__version__}  "
        f"batch {args.batch}  classes {args.num_classes}  iters {args.iters} x best of "
        f"{args.repeats} after {args.warmup} warm-up",
        f"load average at start (1/5/15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        "  (a shared machine: other processes may run alongside)",
        "",
        f"{'metric':<34}{'syncfree us':>13}{'torchmetrics us':>17}{'tm / sf':>10}",
    ]
    lines = list(header)
    print("\n".join(header), flush=True)
    ratios, misses = [], []
    for name, ours_cls, ref_cls, kwargs, kind in _pairs(args.num_classes):
        if args.only and args.only not in name:
            continue
        batches = _batches(kind, 8, args.batch, args.num_classes, device)
        ours = ours_cls(**kwargs).to(device)
        ref = ref_cls(**kwargs).to(device)
        t_ours, t_ref = _time_pair(ours, ref, batches, args.warmup, args.iters, args.repeats, cuda)
        ratio = t_ref / t_ours
        ratios.append(ratio)
        line = f"{name:<34}{t_ours:>13.1f}{t_ref:>17.1f}{ratio:>9.2f}x"
        if ratio < 1.5:
            line += "  below 1.5x"
            misses.append(name)
        lines.append(line)
        print(line, flush=True)
    geo = 1.0
    for r in ratios:
        geo *= r
    geo **= 1.0 / len(ratios)
    footer = ["", f"geometric mean of tm / sf: {geo:.2f}x  (above 1: syncfree is faster)",
              f"rows below the 1.5x target: {', '.join(misses) if misses else 'none'}"]
    if args.note:
        footer.append(f"note: {args.note}")
    lines += footer
    print("\n".join(footer))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
