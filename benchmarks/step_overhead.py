"""Training-step overhead of metrics: ResNet-18 on synthetic data (CUDA only).

    python benchmarks/step_overhead.py --steps 300 --warmup 30 --out benchmarks/results/step_overhead_h100.txt

Three variants of the same step (forward, cross-entropy, backward, SGD step), timed in one run:

* ``none``: no metrics;
* ``torchmetrics``: MeanMetric of the loss + MulticlassAccuracy/Precision/Recall/F1Score
  (``--classes``, macro) updated every step, computed every ``--log-every`` steps and read
  with ``.item()`` the way users log them, then reset;
* ``syncfree``: the same metrics from syncfree in a MetricCollection (and a MeanMetric),
  read every ``--log-every`` steps with ONE ``syncfree.to_host`` call, then reset.

ms/step = wall time of ``--steps`` steps (after ``--warmup``) closed by one
``torch.cuda.synchronize()``; overhead is relative to ``none``.  torchvision is needed.

``--count-syncs N`` also counts each variant's host syncs over N steps, two ways: the sync
guard (``syncfree.guard``, record mode: sync debug mode charged to source lines) and the torch
profiler's CUDA runtime calls whose name holds ``Synchronize``.  ``--train VARIANT`` only trains
that variant for ``--steps`` steps, untimed: the script ``python -m syncfree.trace`` runs.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="batch size (256)")
    parser.add_argument("--steps", type=int, default=300, help="timed steps per variant (300)")
    parser.add_argument("--warmup", type=int, default=30, help="untimed steps first (30)")
    parser.add_argument("--classes", type=int, default=1000, help="classes (1000)")
    parser.add_argument("--image-size", type=int, default=224, help="input side (224)")
    parser.add_argument("--log-every", type=int, default=100, help="read metrics every N (100)")
    parser.add_argument("--amp", action="store_true", help="bfloat16 autocast")
    parser.add_argument("--channels-last", action="store_true", help="channels_last memory")
    parser.add_argument("--repeats", type=int, default=1, help="rounds over the variants (1)")
    parser.add_argument("--count-syncs", type=int, default=0, metavar="N", help="count syncs over N steps (0: no)")
    parser.add_argument("--train", choices=("none", "torchmetrics", "syncfree"), help="train one variant, untimed")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("step_overhead: needs a CUDA GPU (torch.cuda.is_available() is False); nothing run.",
              file=sys.stderr)
        return 2
    try:
        import torchvision
    except ImportError:
        print("step_overhead: needs torchvision (pip install torchvision)", file=sys.stderr)
        return 2
    import torchmetrics
    import torchmetrics.classification as tmc

    import syncfree

    dev = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet18(num_classes=args.classes).to(dev)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, device=dev)
    x = x.contiguous(memory_format=memory_format)
    y = torch.randint(0, args.classes, (args.batch,), device=dev)
    C = args.classes

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return out.detach().float(), loss.detach().float()

    # --- variants ---------------------------------------------------------------------------
    def make_none():
        def run(i):
            step()
        return run

    def make_torchmetrics():
        loss_mean = torchmetrics.MeanMetric().to(dev)
        stats = {
            "acc": tmc.MulticlassAccuracy(C).to(dev),
            "precision": tmc.MulticlassPrecision(C).to(dev),
            "recall": tmc.MulticlassRecall(C).to(dev),
            "f1": tmc.MulticlassF1Score(C).to(dev),
        }
        logged = []

        def run(i):
            out, loss = step()
            loss_mean.update(loss)
            for m in stats.values():
                m.update(out, y)
            if (i + 1) % args.log_every == 0:
                row = {"loss": loss_mean.compute().item()}
                row.update({k: m.compute().item() for k, m in stats.items()})
                logged.append(row)
                loss_mean.reset()
                for m in stats.values():
                    m.reset()
        return run

    def make_syncfree():
        loss_mean = syncfree.MeanMetric().to(dev)
        stats = syncfree.MetricCollection({
            "acc": syncfree.MulticlassAccuracy(C),
            "precision": syncfree.MulticlassPrecision(C),
            "recall": syncfree.MulticlassRecall(C),
            "f1": syncfree.MulticlassF1Score(C),
        }).to(dev)
        logged = []

        def run(i):
            out, loss = step()
            loss_mean.update(loss)
            stats.update(out, y)
            if (i + 1) % args.log_every == 0:
                logged.append(syncfree.to_host({"loss": loss_mean, "stats": stats}))  # ONE read
                loss_mean.reset()
                stats.reset()
        return run

    variants = {"none": make_none, "torchmetrics": make_torchmetrics, "syncfree": make_syncfree}
    if args.train:
        run = variants[args.train]()
        for i in range(args.steps):
            run(i)
        torch.cuda.synchronize()
        return 0

    def timed(run) -> float:
        for i in range(args.warmup):
            run(i)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(args.steps):
            run(i)
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / args.steps * 1e3

    results = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, make in variants.items():
            results[name].append(timed(make()))
    best = {name: min(v) for name, v in results.items()}

    header = [
        f"ResNet-18 step time with metrics on {torch.cuda.get_device_name(dev)}",
        f"date {datetime.datetime.now().isoformat(timespec='seconds')}  "
        f"machine {platform.platform()}  python {platform.python_version()}",
        f"torch {torch.__version__}  torchvision {torchvision.__version__}  "
        f"torchmetrics {torchmetrics.__version__}  CUDA {torch.version.cuda}",
        f"batch {args.batch}  image {args.image_size}  classes {C}  amp {args.amp}  "
        f"channels_last {args.channels_last}  steps {args.steps} after {args.warmup} warm-up  "
        f"metrics read every {args.log_every} steps  best of {args.repeats}",
        "",
        f"{'variant':<14}{'ms/step':>10}{'overhead':>12}",
    ]
    lines = list(header)
    base = best["none"]
    for name, ms in best.items():
        over = "" if name == "none" else f"{(ms / base - 1) * 100:+.1f}%"
        lines.append(f"{name:<14}{ms:>10.2f}{over:>12}")
    if args.count_syncs:
        lines += ["", f"host syncs over {args.count_syncs} steps (one metrics read in them), per step",
                  f"{'variant':<14}{'guard':>10}{'profiler':>10}  profiler calls"]
        for name, make in variants.items():
            guard_n, calls = count_syncs(make(), args.count_syncs, torch)
            prof_n = sum(calls.values())
            lines.append(f"{name:<14}{guard_n / args.count_syncs:>10.2f}{prof_n / args.count_syncs:>10.2f}  "
                         + ", ".join(f"{k} {v}" for k, v in sorted(calls.items())))
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return 0


def count_syncs(run, steps: int, torch) -> tuple[int, dict]:
    """Syncs of ``steps`` calls of ``run``: the guard's events, and the profiler's sync calls by name."""
    from syncfree.guard import no_host_sync

    for i in range(5):
        run(i)
    torch.cuda.synchronize()
    with no_host_sync(mode="record") as recorder:
        for i in range(steps):
            run(i)
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for i in range(steps):
            run(i)
        torch.cuda.synchronize()
    calls = {e.key: e.count for e in prof.key_averages() if "Synchronize" in e.key}
    calls["cudaDeviceSynchronize"] = calls.get("cudaDeviceSynchronize", 1) - 1  # the closing one
    return len(recorder.events), {k: v for k, v in calls.items() if v}


if __name__ == "__main__":
    sys.exit(main())
