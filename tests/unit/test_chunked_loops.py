"""A loop over data cut into batch-size pieces (``for xb in x.split(batch_size)``, also zipped with
its labels' pieces) runs once per batch when it hands the pieces to a model or to a helper with the
model, whether gradients are off where the loop is or only in the helper; pieces of another size
(``h.split(head_dim, -1)``, a split of features) are not batches."""
from __future__ import annotations

from project_lint import lint_files

_HELPER = """
    import torch

    @torch.no_grad()
    def predict(model, x):
        return model(x).softmax(-1)
"""

_SCORE = """
    import torch
    from helper import predict

    class Scorer:
        def __init__(self, batch_size):
            self.batch_size = batch_size
            self.flagged = []

        def score(self, model, xs, ids):
            out = []
            for xb, ib in {iterable}:
                probs = predict(model, xb)
                self.flagged.extend(probs.argmax(-1).tolist())
                out.append(probs.max(-1).values)
            return torch.cat(out)

    def main(model, xs, ids):
        return Scorer(64).score(model, xs.cuda(), ids.cuda())
"""


def _score(tmp_path, iterable: str):
    return lint_files(tmp_path, {"helper.py": _HELPER, "score.py": _SCORE.replace("{iterable}", iterable)})


def test_zipped_batch_pieces_handed_to_a_model_helper_are_a_step_loop(tmp_path) -> None:
    found = _score(tmp_path, "zip(xs.split(self.batch_size), ids.split(self.batch_size))")
    assert found == [("score.py", 14, "SFL104")]


def test_torch_split_with_a_batch_size_is_a_step_loop(tmp_path) -> None:
    found = _score(tmp_path, "zip(torch.split(xs, self.batch_size), torch.split(ids, self.batch_size, dim=0))")
    assert found == [("score.py", 14, "SFL104")]


def test_pieces_of_another_size_or_dimension_are_not_batches(tmp_path) -> None:
    assert _score(tmp_path, "zip(xs.split(self.head_dim), ids.split(self.head_dim))") == []
    assert _score(tmp_path, "zip(xs.split(self.batch_size, -1), ids.split(self.batch_size, -1))") == []
    assert _score(tmp_path, "zip(xs.split(self.batch_size), ids)") == []
