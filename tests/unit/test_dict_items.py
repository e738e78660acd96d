"""Dicts filled item by item (``analysis.dict_items``): a device tensor stored makes the dict a container of
device tensors; a host value stored under a constant key stays a host value; a host value under a key not
known makes the items unknown; ``dict(zip(names, stacked))`` maps names to device tensors."""
from __future__ import annotations

from project_lint import lint_files


def _lint(tmp_path, body: str):
    source = """
        import torch
        import torch.nn.functional as F

        def train(model, loader, opt, lr, names):
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
    """.rstrip(" ") + "\n".join("                " + line for line in body.strip("\n").splitlines()) + "\n"
    return [(line, code) for _, line, code in lint_files(tmp_path, {"train.py": source})]


def test_a_device_tensor_stored_into_an_empty_dict(tmp_path) -> None:
    assert _lint(tmp_path, """
logs = {}
logs["loss"] = loss.detach()
print(f"{logs['loss']:.3f}")
""") == [(13, "SFL107")]


def test_a_host_value_stored_under_its_key_stays_on_the_host(tmp_path) -> None:
    assert _lint(tmp_path, """
logs = {"lr": lr}
logs["loss"] = loss.detach()
logs["step"] = 3
value = float(logs["lr"]) + float(logs["step"])
""") == []


def test_a_host_value_under_an_unknown_key_makes_the_items_unknown(tmp_path) -> None:
    assert _lint(tmp_path, """
logs = {}
logs["loss"] = loss.detach()
for name in names:
    logs[name] = 1.0
value = float(logs["loss"])
""") == []


def test_a_dict_rebound_to_something_else_forgets_its_items(tmp_path) -> None:
    assert _lint(tmp_path, """
logs = {}
logs["loss"] = loss.detach()
logs = {}
value = float(logs["loss"])
""") == []


def test_a_name_not_bound_to_a_dict_display_learns_nothing(tmp_path) -> None:
    assert _lint(tmp_path, """
logs = model.stats()
logs["loss"] = loss.detach()
value = float(logs["loss"])
""") == []


def test_dict_of_zipped_names_and_a_stacked_tensor(tmp_path) -> None:
    assert _lint(tmp_path, """
reduced = dict(zip(["loss"], torch.stack([loss.detach()])))
value = float(reduced["loss"])
""") == [(12, "SFL105")]


def test_a_dict_indexed_by_a_tensor_is_not_a_sequence(tmp_path) -> None:
    """A dict hashes its key: indexing it with a tensor reads nothing from the device."""
    assert _lint(tmp_path, """
logs = {"loss": loss.detach()}
for name in names:
    logs[name] = 1.0
for k in loss.detach():
    logs[k] = 2.0
""") == []
