"""`syncfree-lint server`: a real LSP client (pygls's) drives the real server process over stdio."""
import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

TRAIN = textwrap.dedent(
    """\
    import torch

    from helpers import log_step

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()


    def train(loader):
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item()
            log_step(loss)
        print(f"loss {total:.4f}")
    """
)

HELPERS = textwrap.dedent(
    """\
    def log_step(loss):
        print(loss.item())
    """
)

METRICS = textwrap.dedent(
    """\
    import torch
    from torchmetrics import MeanMetric

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    meter = MeanMetric().cuda()


    def train(loader):
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            meter.update(loss.detach())
    """
)

TIMEOUT = 60


class Editor:
    """A client that keeps the last diagnostics published for each document."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("syncfree-lint-test", "1")
        self.published = {}
        self.changed = asyncio.Event()
        self.versions = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params):
            self.published[params.uri] = params.diagnostics
            self.changed.set()

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "syncfree_lint", "server", cwd=str(self.root))
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=self.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="project")],
        ))
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.wait_for(self.client.stop(), TIMEOUT)

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    async def diagnostics(self, name: str, predicate):
        """Wait until the diagnostics published for ``name`` satisfy ``predicate``."""
        uri = self.uri(name)

        async def wait():
            while uri not in self.published or not predicate(self.published[uri]):
                self.changed.clear()
                await self.changed.wait()
            return self.published[uri]

        return await asyncio.wait_for(wait(), TIMEOUT)

    def open(self, name: str, text: str) -> None:
        self.versions[name] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=self.uri(name), language_id="python", version=1, text=text)))

    def change(self, name: str, text: str) -> None:
        self.versions[name] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri(name), version=self.versions[name]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def save(self, name: str) -> None:
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name))))

    async def actions(self, name: str, diagnostic, only=None):
        return await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name)),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
        )), TIMEOUT)


def apply(text: str, edits) -> str:
    """Apply LSP text edits (ASCII text: characters are UTF-16 units)."""
    lines = text.splitlines(keepends=True) + [""]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position):
        return min(starts[position.line] + position.character, len(text))

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def codes(diagnostics):
    return sorted(d.code for d in diagnostics)


def run(root, scenario):
    async def main():
        editor = Editor(root)
        await editor.start()
        try:
            await scenario(editor)
        finally:
            await editor.stop()

    asyncio.run(main())


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "metrics_step.py").write_text(METRICS)
    return tmp_path


def test_diagnostics_follow_the_unsaved_buffer_and_quick_fixes_clear_them(project):
    async def scenario(editor):
        editor.open("train.py", TRAIN)
        [item] = await editor.diagnostics("train.py", lambda ds: len(ds) == 1)
        assert item.code == "SFL101" and item.source == "syncfree-lint"
        assert item.severity == types.DiagnosticSeverity.Warning
        assert (item.range.start.line, item.range.start.character) == (16, 17)  # `loss.item()`, 0-based
        assert (item.range.end.line, item.range.end.character) == (16, 28)
        assert item.code_description.href.endswith("#sfl101-item-in-step")
        assert "step loop" in item.related_information[0].message
        assert item.related_information[0].location.uri == editor.uri("train.py")

        # didChange: the buffer, not the file on disk, is linted
        two = TRAIN.replace("        log_step(loss)\n", "        log_step(loss)\n        print(loss.item())\n")
        editor.change("train.py", two)
        assert codes(await editor.diagnostics("train.py", lambda ds: len(ds) == 2)) == ["SFL101", "SFL101"]
        editor.change("train.py", TRAIN)
        [item] = await editor.diagnostics("train.py", lambda ds: len(ds) == 1)

        # the quick fixes: the finding's own fix (unsafe here) and a noqa comment
        actions = await editor.actions("train.py", item)
        titles = [a.title for a in actions]
        [fix] = [a for a in actions if "(unsafe)" in a.title]
        [noqa] = [a for a in actions if "noqa" in a.title]
        assert fix.kind == types.CodeActionKind.QuickFix and noqa.kind == types.CodeActionKind.QuickFix, titles
        assert fix.diagnostics[0].code == "SFL101"

        suppressed = apply(TRAIN, noqa.edit.changes[editor.uri("train.py")])
        assert "        total += loss.item()  # noqa: SFL101\n" in suppressed
        editor.change("train.py", suppressed)
        await editor.diagnostics("train.py", lambda ds: len(ds) == 0)

        editor.change("train.py", TRAIN)
        await editor.diagnostics("train.py", lambda ds: len(ds) == 1)
        fixed = apply(TRAIN, fix.edit.changes[editor.uri("train.py")])
        assert "total += loss.detach().double()" in fixed
        editor.change("train.py", fixed)
        await editor.diagnostics("train.py", lambda ds: len(ds) == 0)
        assert (project / "train.py").read_text() == TRAIN  # nothing was written by the server

    run(project, scenario)


def test_noqa_action_keeps_existing_codes_and_fix_all_applies_safe_fixes(project):
    async def scenario(editor):
        text = TRAIN.replace("total += loss.item()", "total += loss.item()  # noqa: E501")
        editor.open("train.py", text)
        [item] = await editor.diagnostics("train.py", lambda ds: len(ds) == 1)
        [noqa] = [a for a in await editor.actions("train.py", item) if "noqa" in a.title]
        assert "total += loss.item()  # noqa: E501, SFL101\n" in apply(text, noqa.edit.changes[editor.uri("train.py")])

        editor.open("metrics_step.py", METRICS)
        found = await editor.diagnostics("metrics_step.py", lambda ds: len(ds) >= 1)
        assert "SFL301" in codes(found)
        [fix_all] = await editor.actions("metrics_step.py", found[0], only=[types.CodeActionKind.SourceFixAll])
        assert fix_all.kind == types.CodeActionKind.SourceFixAll and "fix all" in fix_all.title
        fixed = apply(METRICS, fix_all.edit.changes[editor.uri("metrics_step.py")])
        assert "syncfree" in fixed and fixed != METRICS
        editor.change("metrics_step.py", fixed)
        await editor.diagnostics("metrics_step.py", lambda ds: "SFL301" not in codes(ds))

    run(project, scenario)


def test_a_helper_is_reported_through_its_caller_in_another_file(project):
    async def scenario(editor):
        editor.open("helpers.py", HELPERS)
        [item] = await editor.diagnostics("helpers.py", lambda ds: len(ds) == 1)
        assert item.code == "SFL101" and item.range.start.line == 1
        chain = [(info.location.uri, info.message) for info in item.related_information]
        assert chain[0][0] == editor.uri("train.py") and "step loop" in chain[0][1]
        assert any("log_step" in message for _, message in chain)

        # the caller stops calling it, is saved: the helper's finding goes away on didSave
        editor.open("train.py", TRAIN)
        await editor.diagnostics("train.py", lambda ds: len(ds) == 1)
        quiet = TRAIN.replace("        log_step(loss)\n", "")
        (project / "train.py").write_text(quiet)
        editor.change("train.py", quiet)
        editor.save("train.py")
        await editor.diagnostics("helpers.py", lambda ds: len(ds) == 0)

    run(project, scenario)


SHOWN_EVERY_STEP = textwrap.dedent("""\
    import torch


    def train(model, loader, optimizer, criterion):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            print(f"loss {loss.item():.4f}")
    """)


def test_display_only_suggestion_is_an_action_but_never_in_fix_all(project):
    """A suggestion changes what the program shows: offered as a code action, named so, never
    preferred, and left out of source.fixAll."""
    async def scenario(editor):
        editor.open("shown.py", SHOWN_EVERY_STEP)
        [item] = await editor.diagnostics("shown.py", lambda ds: len(ds) == 1)
        [suggestion] = [a for a in await editor.actions("shown.py", item) if "every 100 steps" in a.title]
        assert "(suggestion: changes what is shown)" in suggestion.title and not suggestion.is_preferred
        fixed = apply(SHOWN_EVERY_STEP, suggestion.edit.changes[editor.uri("shown.py")])
        assert "        if step % 100 == 0:\n            print(f\"loss {loss.item():.4f}\")\n" in fixed
        compile(fixed, "shown.py", "exec")
        fix_all = await editor.actions("shown.py", item, only=[types.CodeActionKind.SourceFixAll])
        assert not fix_all

    run(project, scenario)
