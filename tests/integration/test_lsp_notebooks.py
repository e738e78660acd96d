"""`syncfree-lint server` with notebook documents (LSP 3.17): a real client drives the real server
process; the cells are linted as one program and findings come back on each cell's URI."""
import asyncio
import sys

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402

from tests.integration.test_lsp import Editor, apply  # noqa: E402

SETUP = "%matplotlib inline\nimport torch\nmodel = torch.nn.Linear(4, 1).cuda()\nloader = []\n"
LOOP = "for x, y in loader:\n    loss = model(x.cuda()).sum()\n    !echo step\n    loss.backward()\n    print(loss.item())\n"
QUIET = "for x, y in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n"
NOTEBOOK = "train.ipynb"


class NotebookEditor(Editor):
    """The test_lsp client, declaring notebook sync and keeping the server's capabilities."""

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "syncfree_lint", "server", cwd=str(self.root))
        result = await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(notebook_document=types.NotebookDocumentClientCapabilities(
                synchronization=types.NotebookDocumentSyncClientCapabilities())),
            root_uri=self.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="project")],
        ))
        self.capabilities = result.capabilities
        self.client.initialized(types.InitializedParams())


def run(root, scenario):
    async def main():
        editor = NotebookEditor(root)
        await editor.start()
        try:
            await scenario(editor)
        finally:
            await editor.stop()

    asyncio.run(main())


def cell_uri(editor, index):
    return f"vscode-notebook-cell:{editor.root / NOTEBOOK}#cell{index}"


def open_notebook(editor, cells):
    uris = [cell_uri(editor, i) for i in range(len(cells))]
    editor.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=editor.uri(NOTEBOOK), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kind, document=uri) for uri, (kind, _, _) in zip(uris, cells)]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
                             for uri, (_, language, text) in zip(uris, cells)],
    ))
    return uris


async def published(editor, uri, predicate):
    async def wait():
        while uri not in editor.published or not predicate(editor.published[uri]):
            editor.changed.clear()
            await editor.changed.wait()
        return editor.published[uri]

    return await asyncio.wait_for(wait(), 60)


CODE, MARKUP = types.NotebookCellKind.Code, types.NotebookCellKind.Markup


def test_capabilities_declare_notebook_sync(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")

    async def scenario(editor):
        sync = editor.capabilities.notebook_document_sync
        assert sync is not None and sync.save is True
        [selector] = sync.notebook_selector
        assert selector.notebook.pattern == "**/*.ipynb"
        assert [cell.language for cell in selector.cells] == ["python"]

    run(tmp_path, scenario)


def test_cells_are_one_program_and_findings_land_on_their_cell(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")

    async def scenario(editor):
        uris = open_notebook(editor, [(CODE, "python", SETUP), (MARKUP, "markdown", "# notes"), (CODE, "python", LOOP)])
        [item] = await published(editor, uris[2], lambda ds: len(ds) == 1)
        assert item.code == "SFL101"
        assert (item.range.start.line, item.range.start.character) == (4, 10)  # line 5 of the loop cell
        [link] = item.related_information  # the step loop: line 1 of the same cell
        assert link.location.uri == uris[2] and link.location.range.start.line == 0 and "step loop" in link.message
        assert not await published(editor, uris[0], lambda ds: True)  # the setup cell: cleared, no finding
        assert uris[1] not in editor.published  # a markdown cell is not the server's

        # didChange of a cell's text: the loop stops reading the loss
        editor.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=editor.uri(NOTEBOOK)),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=uris[2], version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=QUIET)])]))))
        await published(editor, uris[2], lambda ds: len(ds) == 0)

        # didSave, then didClose clears every cell
        editor.client.notebook_document_did_save(types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=editor.uri(NOTEBOOK))))
        editor.published.pop(uris[0], None)
        editor.client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=editor.uri(NOTEBOOK)),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in uris]))
        assert not await published(editor, uris[0], lambda ds: True)
        assert not (tmp_path / NOTEBOOK).exists()  # nothing written by the server

    run(tmp_path, scenario)


def test_a_syntax_error_in_a_cell_is_reported_on_that_cell(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")

    async def scenario(editor):
        uris = open_notebook(editor, [(CODE, "python", SETUP), (CODE, "python", "def broken(:\n    pass\n")])
        [item] = await published(editor, uris[1], lambda ds: len(ds) == 1)
        assert item.code == "SFL000" and item.range.start.line == 0

    run(tmp_path, scenario)


def test_a_deleted_cell_is_cleared(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")

    async def scenario(editor):
        uris = open_notebook(editor, [(CODE, "python", SETUP), (CODE, "python", LOOP)])
        await published(editor, uris[1], lambda ds: len(ds) == 1)
        editor.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=editor.uri(NOTEBOOK)),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=1, delete_count=1, cells=[]),
                    did_close=[types.TextDocumentIdentifier(uri=uris[1])])))))
        await published(editor, uris[1], lambda ds: len(ds) == 0)

    run(tmp_path, scenario)


FIXABLE_LOOP = ("losses = []\nfor x, y in loader:\n    out = model(x.cuda())\n    loss = ((out - y.cuda()) ** 2).mean()\n"
                "    losses.append(loss.item())\n")


def test_quick_fixes_are_offered_in_the_cell(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\n")

    async def scenario(editor):
        uris = open_notebook(editor, [(CODE, "python", SETUP), (CODE, "python", FIXABLE_LOOP)])
        [item] = await published(editor, uris[1], lambda ds: len(ds) == 1)
        actions = await asyncio.wait_for(editor.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[1]), range=item.range,
            context=types.CodeActionContext(diagnostics=[item]))), 60)
        [fix] = [a for a in actions if "(unsafe)" in a.title]
        [noqa] = [a for a in actions if "noqa" in a.title]
        assert list(fix.edit.changes) == [uris[1]] and list(noqa.edit.changes) == [uris[1]]
        assert "    losses.append(loss.detach())\n" in apply(FIXABLE_LOOP, fix.edit.changes[uris[1]])
        assert "    losses.append(loss.item())  # noqa: SFL101\n" in apply(FIXABLE_LOOP, noqa.edit.changes[uris[1]])
        # the setup cell has no finding: nothing to offer there
        none = await asyncio.wait_for(editor.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[0]), range=item.range,
            context=types.CodeActionContext(diagnostics=[]))), 60)
        assert not none

    run(tmp_path, scenario)
