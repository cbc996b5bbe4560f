"""Markdown into blocks: ATX and setext headings, front matter, code fences, joined lines."""

from __future__ import annotations

import textwrap

from tests.support.documents import make_markdown
from tests.support.samples import block_texts
from winnow.parsing import parse_document


def test_markdown_atx_headings_become_paths_and_the_first_h1_is_the_title(sample_markdown: bytes) -> None:
    doc = parse_document("acme/ops.md", sample_markdown)
    assert doc.source_type == "markdown"
    assert doc.title == "Operations guide"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        ((), "How to run the service."),
        (("Install",), "Run the installer, then check the logs."),
        (("Upgrade",), "Stop the service before upgrading."),
        (("Upgrade", "Rollback"), "Restore the previous release from backup."),
    ]


def test_markdown_setext_headings_and_front_matter_title() -> None:
    data = make_markdown(
        [(1, "Guide", ["Intro."]), (2, "Setup", ["Do this."]), (3, "Detail", ["Fine print."])],
        title="Front matter title",
        front_matter=True,
        setext=True,
    )
    doc = parse_document("acme/guide.markdown", data)
    assert doc.title == "Front matter title"
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        (("Guide",), "Intro."),
        (("Guide", "Setup"), "Do this."),
        (("Guide", "Setup", "Detail"), "Fine print."),
    ]


def test_markdown_code_fences_keep_lines_and_hide_headings_inside_them() -> None:
    source = textwrap.dedent(
        """\
        # Tool

        ## Usage ##

        Run it like this:

        ```bash
        # not a heading
        tool --flag   value
        ```

        See [the docs](https://example.com/docs) and ![diagram](img.png).

        - first item
        - second item

        ---

        After the rule.
        """
    )
    doc = parse_document("acme/tool.md", source.encode())
    assert [(b.section_path, b.text) for b in doc.blocks] == [
        (("Usage",), "Run it like this:"),
        (("Usage",), "# not a heading\ntool --flag   value"),  # code keeps its spacing
        (("Usage",), "See the docs and diagram."),
        (("Usage",), "- first item\n- second item"),
        (("Usage",), "After the rule."),
    ]


def test_markdown_wrapped_paragraph_lines_are_joined() -> None:
    doc = parse_document("acme/wrap.md", b"First line\nsecond line\n\nNext paragraph\n")
    assert block_texts(doc) == ["First line second line", "Next paragraph"]
