"""reStructuredText into blocks: sections, inline markup, directives and tables as Sphinx and CMake
write them."""

from __future__ import annotations

from winnow.parsing import parse_document

CMAKE_RST = """\
CPACK_RPM_PACKAGE_RELEASE
-------------------------

.. note::

 This is the string that goes into the RPM ``Release:`` field, see :variable:`CPACK_RPM_DIST`.

.. variable:: CPACK_RPM_DIST

 .. versionadded:: 3.6

 The dist tag that is added to the RPM ``Release:`` field.

``CPACK_APPLE_PKG_INSTALLER_CONTENT``
  .. versionadded:: 3.23

  This contains all the XML elements that specify installer-wide options [#]_.

  .. __: https://example.org/installer

.. code-block:: cmake

  set(CPACK_RPM_DIST "el9")

.. [#] Footnotes are part of the text.

.. |name| replace:: never shown
.. A comment that is never shown.
"""


def test_rst_directives_nested_at_any_indentation_keep_their_prose_and_lose_their_markup() -> None:
    doc = parse_document("acme/rpm.rst", CMAKE_RST.encode())
    texts = [block.text for block in doc.blocks]
    assert texts == [
        "This is the string that goes into the RPM Release: field, see CPACK_RPM_DIST.",
        "CPACK_RPM_DIST",
        "versionadded 3.6",
        "The dist tag that is added to the RPM Release: field.",
        "CPACK_APPLE_PKG_INSTALLER_CONTENT",
        "versionadded 3.23",
        "This contains all the XML elements that specify installer-wide options.",
        'set(CPACK_RPM_DIST "el9")',
        "Footnotes are part of the text.",
    ]
    assert all(block.section_path == ("CPACK_RPM_PACKAGE_RELEASE",) for block in doc.blocks)


RST = """\
=============
Backup policy
=============

Nightly backups
===============

Backups run at **02:00** every night and are kept for `thirty days <https://example.org>`_.

.. note::
   Restores are tested every quarter.

.. image:: diagram.png

Retention
---------

+------------+-----------+
| Tier       | Kept      |
+============+===========+
| Daily      | 30 days   |
+------------+-----------+
| Monthly    | 12 months |
+------------+-----------+
"""


def test_rst_sections_inline_markup_directives_and_grid_tables() -> None:
    doc = parse_document("acme/backup.rst", RST.encode())
    assert doc.title == "Backup policy"
    texts = {block.text: block.section_path for block in doc.blocks}
    assert texts["Backups run at 02:00 every night and are kept for thirty days."] == ("Nightly backups",)
    assert texts["Restores are tested every quarter."] == ("Nightly backups",)
    assert not any("diagram.png" in text for text in texts)
    (table,) = [block for block in doc.blocks if block.table is not None]
    assert table.section_path == ("Nightly backups", "Retention")
    assert "Tier: Monthly | Kept: 12 months" in table.text


def test_rst_simple_table_span_underlines_are_not_rows_and_wrapped_lines_join_their_row() -> None:
    # Given a simple table as pyparsing's docs write one: the header underlined with dashes, and a
    # cell whose text wraps onto a line with an empty first column
    source = (
        "Charsets\n========\n\n"
        "=========  ==========  ===========\n"
        "Set        Alias       Description\n"
        "---------  ----------  -----------\n"
        "Arabic     arab        Right to left\n"
        "                       script\n"
        "Greek      grek\n"
        "=========  ==========  ===========\n"
    )
    # When it is parsed
    [block] = [b for b in parse_document("acme/sets.rst", source.encode()).blocks if b.table]
    # Then the dashes are no row, and the wrapped line belongs to the row above
    assert block.table is not None
    assert block.table.header == ("Set", "Alias", "Description")
    assert block.table.rows == (("Arabic", "arab", "Right to left script"), ("Greek", "grek", ""))


RELEASE_NOTES = """\
Release notes
=============

Upgrading to 4.0 needs these steps:

* The SQLite backend was removed in 4.0; run ``quarry migrate --from sqlite``
  on a 3.x installation before upgrading.
* The ``--legacy-auth`` option is gone.

Command-line options
--------------------

-c FILE, --config FILE   Read the settings from FILE instead of ``quarry.ini``.
--check                  Validate the settings and exit
                         without starting the server.
-v, --verbose            Log every request at the *debug* level.

Restart the server after a change.
"""


def test_rst_list_items_and_option_entries_stay_apart_and_keep_their_literals() -> None:
    doc = parse_document("acme/notes.rst", RELEASE_NOTES.encode())
    texts = [block.text for block in doc.blocks]
    # the bullets were read as emphasis running from one item's star to the next, which swallowed
    # the ``literals`` between them; the items and their introduction are one list, an item a line
    assert texts[0] == (
        "Upgrading to 4.0 needs these steps:\n"
        "* The SQLite backend was removed in 4.0; run quarry migrate --from sqlite on a 3.x "
        "installation before upgrading.\n"
        "* The --legacy-auth option is gone."
    )
    assert doc.blocks[0].head == "Upgrading to 4.0 needs these steps:"
    # each option with its description is an entry of its own, not one paragraph of all three
    assert texts[1:] == [
        "-c FILE, --config FILE Read the settings from FILE instead of quarry.ini.",
        "--check Validate the settings and exit without starting the server.",
        "-v, --verbose Log every request at the debug level.",
        "Restart the server after a change.",
    ]
    assert [block.entry for block in doc.blocks[1:4]] == [True, True, True]
