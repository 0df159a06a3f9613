"""Append items to a comma-separated list (call arguments, tuple elements)
so that the result looks as if the author had written it.

The layout of the existing list decides the layout of what is added: items
on one line stay on one line; items one per line get the new items one per
line at the same indentation; a trailing comma stays trailing; a comment
after the last item stays on that item.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

import libcst as cst

Item = TypeVar("Item", cst.Arg, cst.Element)

SPACE = cst.SimpleWhitespace(" ")
NOTHING = cst.SimpleWhitespace("")


def _is_multiline(whitespace) -> bool:
    return isinstance(whitespace, cst.ParenthesizedWhitespace)


def _clean_line_break(whitespace: cst.ParenthesizedWhitespace, last_line) -> cst.ParenthesizedWhitespace:
    """A line break without the comments or blank lines of ``whitespace``."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=[],
        indent=whitespace.indent,
        last_line=last_line,
    )


def _has_comma(item) -> bool:
    return isinstance(item.comma, cst.Comma)


def _tail_of(item) -> cst.BaseParenthesizableWhitespace:
    """The whitespace between the last item (and its comma) and the closing bracket."""
    if _has_comma(item):
        return item.comma.whitespace_after
    return getattr(item, "whitespace_after_arg", NOTHING)


def _without_tail(item: Item) -> Item:
    if isinstance(item, cst.Arg):
        return item.with_changes(whitespace_after_arg=NOTHING)
    return item


def _item_line_break(items: Sequence, opening) -> cst.ParenthesizedWhitespace | None:
    """How items are separated when they sit one per line, or None when they share lines."""
    if len(items) >= 2 and _has_comma(items[-2]) and _is_multiline(items[-2].comma.whitespace_after):
        return items[-2].comma.whitespace_after
    if len(items) < 2 and _is_multiline(opening):
        return opening
    return None


def _separator(items: Sequence, opening) -> cst.Comma:
    """The comma (and following whitespace) used between two items."""
    line_break = _item_line_break(items, opening)
    if line_break is not None:
        return cst.Comma(whitespace_after=_clean_line_break(line_break, line_break.last_line))
    if len(items) >= 2 and _has_comma(items[-2]):
        comma = items[-2].comma
        return cst.Comma(whitespace_before=comma.whitespace_before, whitespace_after=comma.whitespace_after)
    return cst.Comma(whitespace_after=SPACE)


def append_items(
    items: Sequence[Item],
    new_items: Sequence[Item],
    *,
    opening=NOTHING,
    single_comma_required: bool = False,
) -> list[Item]:
    """``items`` followed by ``new_items``, laid out like ``items``.

    ``opening`` is the whitespace after the opening bracket (it tells
    whether a lone item sits on its own line).  ``single_comma_required``
    marks a one-element tuple, whose comma is syntax rather than a trailing
    comma.
    """
    if not new_items:
        return list(items)
    if not items:
        return _joined(list(new_items), cst.Comma(whitespace_after=SPACE), final_comma=cst.MaybeSentinel.DEFAULT)
    last = items[-1]
    lone_syntax_comma = single_comma_required and len(items) == 1 and not _is_multiline(opening)
    trailing = _has_comma(last) and not lone_syntax_comma
    tail = _tail_of(last) if (trailing or not _has_comma(last)) else NOTHING
    separator = _separator(items, opening)

    line_break = _item_line_break(items, opening)
    if _is_multiline(tail) and line_break is None:
        # Only the closing bracket has a line of its own; the items share lines
        # (``f(\n    a, b\n)``, ``f(a, b=(\n    1, 2),\n)``): the new items join
        # the last item's line, and the bracket keeps its line and indentation.
        between = cst.Comma(whitespace_after=SPACE)
        old_last = _without_tail(last).with_changes(comma=between)
        added = _joined(list(new_items), between, final_comma=cst.MaybeSentinel.DEFAULT)
        if trailing:
            added[-1] = added[-1].with_changes(comma=last.comma)
        else:
            added[-1] = _with_tail(added[-1], tail)
        return [*items[:-1], old_last, *added]
    if _is_multiline(tail):
        # The closing bracket is on its own line and the items one per line: the new
        # items go on lines of their own before it, and a comment after the old last
        # item stays there.
        item_indent = line_break.last_line
        old_comma = last.comma if _has_comma(last) else cst.Comma()
        old_last = _without_tail(last).with_changes(
            comma=old_comma.with_changes(whitespace_after=tail.with_changes(last_line=item_indent))
        )
        between = cst.Comma(whitespace_after=_clean_line_break(tail, item_indent))
        closing = _clean_line_break(tail, tail.last_line)
        added = _joined(list(new_items), between, final_comma=cst.MaybeSentinel.DEFAULT)
        if trailing:
            added[-1] = added[-1].with_changes(comma=cst.Comma(whitespace_after=closing))
        else:
            added[-1] = _with_tail(added[-1], closing)
        return [*items[:-1], old_last, *added]

    old_last = _without_tail(last).with_changes(comma=separator)
    final_comma = last.comma if trailing else cst.MaybeSentinel.DEFAULT
    added = _joined(list(new_items), separator, final_comma=final_comma)
    if isinstance(last, cst.Arg) and not trailing:
        added[-1] = _with_tail(added[-1], last.whitespace_after_arg)
    return [*items[:-1], old_last, *added]


def _joined(new_items: list, between: cst.Comma, *, final_comma) -> list:
    out = [item.with_changes(comma=between) for item in new_items[:-1]]
    out.append(new_items[-1].with_changes(comma=final_comma))
    return out


def _with_tail(item, whitespace):
    # Only an Arg holds the whitespace before the closing bracket itself; a
    # tuple or list keeps it on its closing bracket, which is left alone.
    if isinstance(item, cst.Arg):
        return item.with_changes(whitespace_after_arg=whitespace)
    return item
