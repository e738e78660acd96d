"""Run `python -m syncfree.trace --lint` on four real training scripts of the dev corpus, on the CPU
stand-in with tiny settings and tiny local data in a scratch folder, and save the reports.
(Lightning's WikiText2 demo imports `requests` even when its data file is there: pip install requests.)

    python benchmarks/trace_corpus.py --corpus /work/corpus --out benchmarks/results/trace_corpus.txt

Nothing of the corpus is copied into this repository: the data is made (or cut) in --scratch.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

TRACE = [sys.executable, "-m", "syncfree.trace", "--lint", "--steps", "20", "--warmup", "2"]


def word_language_model(corpus: Path, scratch: Path) -> tuple[list[str], Path, dict]:
    """pytorch-examples word_language_model, LSTM, AdamW, on 60 kB of wikitext-2's valid.txt
    (its train.txt is not in the corpus)."""
    source = corpus / "pytorch-examples" / "word_language_model"
    data = scratch / "wlm"
    data.mkdir(parents=True, exist_ok=True)
    text = (source / "data" / "wikitext-2" / "valid.txt").read_bytes()
    test = (source / "data" / "wikitext-2" / "test.txt").read_bytes()
    (data / "train.txt").write_bytes(text[:60000])
    (data / "valid.txt").write_bytes(test[:20000])
    (data / "test.txt").write_bytes(test[:20000])
    args = [
        str(source / "main.py"), "--data", str(data), "--accel", "--use-optimizer", "--lr", "0.001",
        "--emsize", "32", "--nhid", "32", "--epochs", "1", "--batch_size", "8", "--bptt", "20",
        "--log-interval", "5", "--save", str(data / "model.pt"),
    ]
    return args, data, {}


def nanogpt(corpus: Path, scratch: Path) -> tuple[list[str], Path, dict]:
    """nanoGPT train.py, 2 layers of 32 wide, on random tokens (its data/ and configurator.py are
    read from the working folder)."""
    import numpy as np

    source = corpus / "nanoGPT"
    run = scratch / "nanogpt"
    (run / "data" / "tiny").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "configurator.py", run / "configurator.py")
    rng = np.random.default_rng(0)
    rng.integers(0, 65, 20000, dtype=np.uint16).tofile(run / "data" / "tiny" / "train.bin")
    rng.integers(0, 65, 4000, dtype=np.uint16).tofile(run / "data" / "tiny" / "val.bin")
    with open(run / "data" / "tiny" / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": 65}, f)
    args = [
        str(source / "train.py"), "--dataset=tiny", "--device=cuda", "--compile=False", "--dtype=float32",
        "--batch_size=4", "--block_size=32", "--n_layer=2", "--n_head=2", "--n_embd=32", "--max_iters=40",
        "--eval_interval=10", "--eval_iters=2", "--gradient_accumulation_steps=1",
        "--always_save_checkpoint=False", f"--out_dir={run / 'out'}",
    ]
    return args, run, {}


def mingpt(corpus: Path, scratch: Path) -> tuple[list[str], Path, dict]:
    """minGPT projects/chargpt, gpt-nano, on 30 kB of wikitext-2 (input.txt in the working folder)."""
    source = corpus / "minGPT"
    run = scratch / "mingpt"
    run.mkdir(parents=True, exist_ok=True)
    text = (corpus / "pytorch-examples" / "word_language_model" / "data" / "wikitext-2" / "valid.txt").read_text(
        encoding="utf-8"
    )
    # the script samples from the context "O God, O God!" at its first step: its letters must be in the data
    (run / "input.txt").write_text(text[:30000] + "\nO God, O God!\n", encoding="utf-8")
    args = [
        str(source / "projects" / "chargpt" / "chargpt.py"), "--model.model_type=gpt-nano",
        "--data.block_size=32", "--trainer.batch_size=8", "--trainer.num_workers=0", "--trainer.max_iters=40",
    ]
    return args, run, {"PYTHONPATH": str(source)}


def lightning_transformer(corpus: Path, scratch: Path) -> tuple[list[str], Path, dict]:
    """pytorch-lightning examples/pytorch/basics/transformer.py, Trainer(accelerator="auto"), unchanged;
    its WikiText2 demo reads ./data/wikitext-2.txt (here wikitext-2's valid.txt)."""
    run = scratch / "lightning"
    (run / "data").mkdir(parents=True, exist_ok=True)
    source = corpus / "pytorch-examples" / "word_language_model" / "data" / "wikitext-2" / "valid.txt"
    shutil.copyfile(source, run / "data" / "wikitext-2.txt")
    return [str(corpus / "pytorch-lightning" / "examples" / "pytorch" / "basics" / "transformer.py")], run, {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/corpus"))
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/syncfree_trace_corpus"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/trace_corpus.txt"))
    opts = parser.parse_args()
    sections = []
    for setup in (word_language_model, nanogpt, mingpt, lightning_transformer):
        args, cwd, extra_env = setup(opts.corpus, opts.scratch)
        cmd = TRACE + args
        if setup is lightning_transformer:  # 6.8M parameters: fewer steps on the CPU
            cmd = [*TRACE[:5], "10", *TRACE[6:], *args]
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", **extra_env)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        report = done.stdout[done.stdout.find("syncfree.trace: mode"):] if "syncfree.trace: mode" in done.stdout else ""
        shown_env = " ".join(f"{k}={v}" for k, v in extra_env.items())
        header = [
            f"## {setup.__name__}: {setup.__doc__.split(chr(10))[0]}",
            f"$ cd {cwd} && {shown_env + ' ' if shown_env else ''}CUDA_VISIBLE_DEVICES= {shlex.join(['python'] + cmd[1:])}",
            f"exit {done.returncode}, {seconds:.0f} s wall on this machine",
        ]
        if done.returncode != 0:
            header.append("stderr (tail):\n" + done.stderr[-2000:])
        sections.append("\n".join(header) + "\n\n" + report)
        print(sections[-1], flush=True)
    opts.out.write_text(
        "# python -m syncfree.trace --lint on four corpus scripts (CPU stand-in), "
        f"made by: python benchmarks/trace_corpus.py --corpus {opts.corpus}\n\n" + "\n".join(sections),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
