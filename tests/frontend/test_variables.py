"""Variable substitution: values, positions mapped back, secrets, errors."""

from __future__ import annotations

import pytest

from sqlstream.diagnostics.errors import VariableError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend.variables import substitute


def test_substitutes_in_code_and_strings_but_not_comments():
    text = "SET 'a' = '${x}/b'; -- ${not_defined}\n/* ${nor_this} */ SELECT ${y}"
    result = substitute(Source(text), {"x": "DATA", "y": 1})
    assert result.text == "SET 'a' = 'DATA/b'; -- ${not_defined}\n/* ${nor_this} */ SELECT 1"


def test_positions_after_a_value_map_back_to_the_original():
    text = "SELECT ${long_name} FROM t"
    result = substitute(Source(text, "f.ssql"), {"long_name": "c"})
    span = result.span(result.text.index("FROM"), result.text.index("FROM") + 4)
    assert (span.line, span.column, span.start, span.end) == (1, 21, 20, 24)
    inside = result.span(result.text.index("c"))
    assert inside.column == 8  # the start of ${long_name}


def test_env_values_are_secrets_and_the_compiler_gets_a_token_not_the_value():
    """The text the parser sees holds the secret's token; the value comes back only by
    ``unseal`` (raw for a value, escaped for Spark SQL text), and ``redact`` hides both the
    token (compiler texts) and the value (Spark's texts)."""
    result = substitute(Source("x = '${env:TOKEN}'"), {}, {"TOKEN": "hun'ter\\2"})
    assert result.text == "x = '__sqlstream_secret_0__'"
    assert "hun" not in result.text
    (secret,) = result.source.secrets
    assert (secret.name, secret.value, secret.span.start, secret.span.end, secret.token) == (
        "TOKEN",
        "hun'ter\\2",
        5,
        17,
        "__sqlstream_secret_0__",
    )
    assert result.source.unseal(result.text) == "x = 'hun'ter\\2'"
    assert result.source.unseal(result.text, sql=True) == "x = 'hun\\'ter\\\\2'"
    assert result.source.redact("pw=hun'ter\\2 at __sqlstream_secret_0__") == "pw=*** at ***"
    assert Source("x").redact("a __sqlstream_secret_0__ b") == "a __sqlstream_secret_0__ b"


def test_each_secret_keeps_the_reference_it_came_from():
    """Two variables with one value, one variable used twice: one record per reference,
    each with its name and position (the printer reads these, not the environment)."""
    text = "a = '${env:A}', b = '${ env:B }', c = '${env:A}x'"
    result = substitute(Source(text), {}, {"A": "s3cr3t", "B": "s3cr3t"})
    assert [(s.name, s.value, text[s.span.start : s.span.end]) for s in result.source.secrets] == [
        ("A", "s3cr3t", "${env:A}"),
        ("B", "s3cr3t", "${ env:B }"),
        ("A", "s3cr3t", "${env:A}"),
    ]
    # one token per value: texts equal at run time are equal to the compiler too
    assert {s.token for s in result.source.secrets} == {"__sqlstream_secret_0__"}


def test_booleans_render_as_sql():
    assert substitute(Source("${b}"), {"b": True}).text == "true"


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("SELECT ${nope}", "undefined variable 'nope'; did you mean 'nop'?", 8),
        ("SELECT ${env:NOT_SET_ANYWHERE}", "environment variable 'NOT_SET_ANYWHERE' is not set", 8),
        ("SELECT 1 + ${oops", "unterminated variable reference", 12),
        ("SELECT ${a b}", "bad variable name 'a b'", 8),
    ],
)
def test_errors_point_at_the_reference(text, message, column):
    with pytest.raises(VariableError) as info:
        substitute(Source(text, "v.ssql"), {"nop": 1}, {})
    assert message in info.value.message
    assert info.value.span.column == column
    assert info.value.render().startswith(f"v.ssql:1:{column}: SS001")
