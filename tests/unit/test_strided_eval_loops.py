"""An evaluation loop that cuts its data into batches with a stride (``for i in range(0, n, bs):
x = xs[i:i + bs]``) under ``no_grad`` runs once per evaluation step (``eval_loops.strided_slices``),
also when it calls a method of the model (``model.score(...)``); data it moves batch by batch is on
the host. And hooks that a class registers and removes in another method live as long as it."""
from __future__ import annotations

from project_lint import lint_files

_EVAL = """
    import torch

    @torch.no_grad()
    def evaluate(model, xs, device, bs=64):
        model.eval()
        preds = []
        for i in range({range}):
            {cut}
            logits = model.{entry}(x)
            preds.extend(logits.argmax(1).tolist())
        return preds
"""


def _eval(tmp_path, range_args="0, xs.shape[0], bs", cut="x = xs[i:i + bs].to(device)", entry="forward"):
    program = _EVAL.replace("{range}", range_args).replace("{cut}", cut).replace("{entry}", entry)
    return lint_files(tmp_path, {"evaluate.py": program})


def test_a_strided_loop_over_slices_evaluates(tmp_path) -> None:
    assert ("evaluate.py", 11, "SFL104") in _eval(tmp_path)


def test_a_method_of_the_model_evaluates_too(tmp_path) -> None:
    assert ("evaluate.py", 11, "SFL104") in _eval(tmp_path, entry="score")


def test_a_module_method_is_not_an_evaluation(tmp_path) -> None:
    # (data it moves batch by batch would make it one: see the last test)
    assert _eval(tmp_path, entry="apply", cut="x = xs[i:i + bs]") == []


def test_a_count_loop_is_not_an_evaluation(tmp_path) -> None:
    assert _eval(tmp_path, range_args="xs.shape[0]", cut="x = xs[i:i + 1].to(device)") == []


def test_a_slice_not_cut_at_the_counter_is_not_a_batch(tmp_path) -> None:
    assert _eval(tmp_path, cut="x = xs[:bs].to(device)") == []


def test_data_moved_batch_by_batch_is_on_the_host(tmp_path) -> None:
    found = _eval(tmp_path, cut="batch = xs[i:i + bs]\n            rows = batch.tolist()\n            x = batch.to(device)")
    assert [f for f in found if f[1] in (10, 11, 12)] == []  # `batch.tolist()` and the move read no device
    assert ("evaluate.py", 13, "SFL104") in found


def test_hooks_a_class_removes_elsewhere_run_where_it_is_used(tmp_path) -> None:
    detector = """
        import torch

        class NanDetector:
            def __init__(self, model):
                self.handles = []
                for module in model.modules():
                    self.handles.append(module.register_forward_hook(self._check))

            def _check(self, module, inputs, output):
                if torch.isnan(output).any():
                    print("nan in", module)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                for handle in self.handles:
                    handle.remove()
    """
    train = """
        import torch
        from detector import NanDetector

        def train(model, loader, optimizer, device):
            for x in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                optimizer.step()
            with NanDetector(model):
                model(x.to(device))
    """
    assert lint_files(tmp_path, {"detector.py": detector, "train.py": train}) == []


def test_a_strided_loop_that_moves_each_batch_evaluates_without_a_model_call(tmp_path) -> None:
    """`render(rays)` of a function handed in: the loop moves each slice to the device and works on it."""
    program = """
        import torch

        @torch.no_grad()
        def evaluate(render, rays_val, device, chunk=1024):
            out = []
            for i in range(0, rays_val.shape[0], chunk):
                rays = rays_val[i:i + chunk, :2].to(device)
                out.append(render(rays).cpu())
            return torch.cat(out)

        @torch.no_grad()
        def summarize(values, chunk=64):
            parts = []
            for i in range(0, len(values), chunk):
                parts.append(sum(values[i:i + chunk]))
            return parts
    """
    findings = lint_files(tmp_path, {"evaluate.py": program})
    assert ("evaluate.py", 9, "SFL102") in findings, findings
    assert not any(f[1] > 10 for f in findings), findings  # no move, no model: not an evaluation loop


def test_a_strided_loop_that_builds_device_tensors_from_each_batch_evaluates(tmp_path) -> None:
    """`torch.tensor([vocab[w] for w in words], device=...)` sends each cut of host data to the device, as `.to()` would;
    built without `device=` it stays on the host and the loop is not an evaluation."""
    program = """
        import torch

        @torch.no_grad()
        def neighbours(emb, words, vocab, k=5, bs=8):
            found = []
            for i in range(0, len(words), bs):
                batch = words[i:i + bs]
                q = torch.tensor([vocab[w] for w in batch]{device})
                top = (emb[q] @ emb.t()).topk(k, dim=1)
                found.append(top.indices.cpu())
            return found
    """
    on_device = lint_files(tmp_path, {"neighbours.py": program.replace("{device}", ", device=emb.device")})
    assert {("neighbours.py", 9, "SFL401"), ("neighbours.py", 11, "SFL102")} <= set(on_device), on_device
    (tmp_path / "host").mkdir()
    assert lint_files(tmp_path / "host", {"neighbours.py": program.replace("{device}", "")}) == []


_COLUMNS = """
    import torch

    @torch.no_grad()
    def evaluate(model, z, edges, bs=128):
        hits = 0
        for start in range(0, edges.size(1), bs):
            pos = edges[{cut}]
            score = model.score(z, pos)
            hits += (score > 0).sum().item()
        return hits
"""


def test_a_cut_along_a_later_dimension_given_in_any_argument_evaluates(tmp_path) -> None:
    # edges kept as columns (`[2, E]`), cut at the counter and handed to the model second
    found = lint_files(tmp_path, {"evaluate.py": _COLUMNS.format(cut=":, start:start + bs")})
    assert ("evaluate.py", 10, "SFL101") in found


def test_a_fixed_column_range_is_not_a_batch(tmp_path) -> None:
    assert lint_files(tmp_path, {"evaluate.py": _COLUMNS.format(cut=":, :bs")}) == []


_HELPER_CUT = """
    import torch

    def get_batch(source, i, bptt):
        n = min(bptt, len(source) - 1 - i)
        return source[i:i + n], source[i + 1:i + 1 + n]

    @torch.no_grad()
    def evaluate(model, data_source, bptt, losses):
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = {cut}
            output = model(data)
            losses.append((output - targets).pow(2).mean().item())
"""


def test_a_strided_loop_whose_batch_a_helper_cuts_evaluates(tmp_path) -> None:
    """`data, targets = get_batch(data_source, i, bptt)`: the helper cuts the data at the counter."""
    found = lint_files(tmp_path, {"lm.py": _HELPER_CUT.format(cut="get_batch(data_source, i, bptt)")})
    assert ("lm.py", 13, "SFL101") in found
    (tmp_path / "b").mkdir()
    found = lint_files(tmp_path / "b", {"lm.py": _HELPER_CUT.format(cut="get_batch(data_source, 0, bptt)")})
    assert not found  # not cut at the counter: the same batch each time, not an evaluation over the data
