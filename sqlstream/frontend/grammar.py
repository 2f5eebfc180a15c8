"""The statement grammar (``grammar/ssql.lark``, shipped in the package) and its Lark LALR
parser, with the token helpers the tree builder and the error messages share.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Tree
from lark.lexer import PatternStr

GRAMMAR_FILE = "ssql.lark"


def grammar_text() -> str:
    """Read the grammar from the installed package (``sqlstream/grammar/``).

    In a source checkout installed in editable mode the package has no copy; the
    repository's ``grammar/`` folder is used then.
    """
    packaged = resources.files("sqlstream").joinpath("grammar").joinpath(GRAMMAR_FILE)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammar" / GRAMMAR_FILE).read_text("utf-8")


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """The LALR parser. Trees keep every token (``keep_all_tokens``): a node's span runs
    from its first token to its last (:meth:`TreeBuilder.span`), which costs nothing at parse
    time, where Lark's ``propagate_positions`` was half of the grammar's time
    (``bench/README.md``, "Compile scaling"). :func:`kept_children` drops the keyword and
    punctuation tokens when the builder reads a node's children."""
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        keep_all_tokens=True,
        maybe_placeholders=False,
        cache=True,  # LALR tables cached in the temp folder, keyed by the grammar's hash
    )


@functools.lru_cache(maxsize=1)
def punctuation() -> frozenset[str]:
    """Terminals written as literal strings in the grammar ("CREATE"i, "(", …): the tokens
    Lark drops from trees unless ``keep_all_tokens``. Every named terminal of the grammar
    is a regular expression, so a string pattern marks one (tests/frontend/test_parser.py checks
    the set against what Lark drops)."""
    return frozenset(t.name for t in lark_parser().terminals if isinstance(t.pattern, PatternStr))


def as_tree(node: Tree | Token | None) -> Tree:
    """``node`` as the rule's tree the grammar puts there (Lark types a child as a tree or a
    token; the grammar decides which).

    Raises:
        TypeError: ``node`` is a token or missing (the builder does not match the grammar).
    """
    if not isinstance(node, Tree):
        raise TypeError(f"a rule's tree expected, got {node!r}")
    return node


def as_token(node: Tree | Token | None) -> Token:
    """``node`` as the token the grammar puts there.

    Raises:
        TypeError: ``node`` is a tree or missing (the builder does not match the grammar).
    """
    if not isinstance(node, Token):
        raise TypeError(f"a token expected, got {node!r}")
    return node


def kept_children(node: Tree | Token | None) -> list[Tree | Token]:
    """``node``'s children without keyword and punctuation tokens (:func:`punctuation`):
    the children Lark gives without ``keep_all_tokens``.

    Raises:
        TypeError: ``node`` is no tree (see :func:`as_tree`).
    """
    node = as_tree(node)
    dropped = punctuation()
    return [c for c in node.children if isinstance(c, Tree) or c.type not in dropped]


def first_token(node: Tree | Token) -> Token:
    """The first token under ``node`` (``node`` itself when it is a token)."""
    while isinstance(node, Tree):
        node = node.children[0]
    return node


def last_token(node: Tree | Token) -> Token:
    """The last token under ``node`` (``node`` itself when it is a token)."""
    while isinstance(node, Tree):
        node = node.children[-1]
    return node
