"""Reports of a test run: text (pytest-like), JSON and JUnit XML (for CI systems).

No pyspark import.
"""

from __future__ import annotations

import json
import os
from xml.etree import ElementTree as ET

from sqlstream.testing.compare import CaseResult, Failure


def _id(result: CaseResult) -> str:
    return f"{os.path.relpath(result.path)}::{result.name}"


def flow(row: dict) -> str:
    """A row as a YAML flow mapping: ``{origin: EWR, flights: 2}``."""
    return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in row.items()) + "}"


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return flow(value)
    text = str(value)
    plain = (
        text
        and text.strip() == text
        and not any(c in text for c in ":{}[],#&*!|>'\"%@`")
        and text.lower() not in ("null", "true", "false", "~", "yes", "no")
    )
    try:
        float(text)
        plain = False
    except ValueError:
        pass
    return text if plain else "'" + text.replace("'", "''") + "'"


def failure_lines(failure: Failure) -> list[str]:
    """The lines of one failure: ``step 2 (line 14), sink hourly: …`` and the row diff."""
    lines = [f"step {failure.step} (line {failure.line}), {failure.check}: {failure.message}"]
    for row in failure.missing:
        lines.append(f"  - missing:    {flow(row)}")
    for row in failure.unexpected:
        lines.append(f"  + unexpected: {flow(row)}")
    return lines


def result_line(result: CaseResult) -> str:
    """``PASSED path::name (1.2 s)`` (``FAILED``, ``ERROR``)."""
    return f"{result.status.upper()} {_id(result)} ({result.seconds:.1f} s)"


def text(results: list[CaseResult], seconds: float) -> str:
    """The text report: the failures and errors in detail, then a summary line."""
    lines = []
    for result in results:
        if result.status == "passed":
            continue
        lines.append(f"____ {_id(result)} ____")
        if result.error is not None:
            lines.append(result.error.render())
        for failure in result.failures:
            lines += ["  " + line for line in failure_lines(failure)]
        lines.append("")
    counts = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "error")}
    summary = ", ".join(f"{n} {s if s != 'error' else 'errors'}" for s, n in counts.items() if n)
    lines.append(f"{summary or 'no tests ran'} in {seconds:.1f} s")
    return "\n".join(lines)


def to_json(results: list[CaseResult], seconds: float) -> str:
    """A JSON document: ``{"tests": [{file, name, line, status, seconds, failures,
    error}], "summary": {passed, failed, errors, seconds}}``."""
    tests = [
        {
            "file": str(r.path),
            "name": r.name,
            "line": r.line,
            "status": r.status,
            "seconds": round(r.seconds, 3),
            "failures": [f.to_dict() for f in r.failures],
            "error": r.error.to_dict() if r.error else None,
        }
        for r in results
    ]
    summary = {
        "passed": sum(r.status == "passed" for r in results),
        "failed": sum(r.status == "failed" for r in results),
        "errors": sum(r.status == "error" for r in results),
        "seconds": round(seconds, 3),
    }
    return json.dumps({"tests": tests, "summary": summary}, indent=2, default=str)


def junit(results: list[CaseResult], seconds: float) -> str:
    """JUnit XML: one ``<testsuite>`` per test file, one ``<testcase>`` per test
    (``classname`` the file, ``name`` the test), a ``<failure>`` with the diff or an
    ``<error>`` with the problem."""
    root = ET.Element(
        "testsuites",
        tests=str(len(results)),
        time=f"{seconds:.3f}",
        failures=str(sum(r.status == "failed" for r in results)),
        errors=str(sum(r.status == "error" for r in results)),
    )
    suites: dict[str, ET.Element] = {}
    for result in results:
        name = os.path.relpath(result.path)
        suite = suites.get(name)
        if suite is None:
            suite = suites[name] = ET.SubElement(root, "testsuite", name=name)
        case = ET.SubElement(
            suite,
            "testcase",
            classname=name,
            name=result.name,
            time=f"{result.seconds:.3f}",
            file=name,
            line=str(result.line),
        )
        if result.status == "failed":
            body = [line for f in result.failures for line in failure_lines(f)]
            first = result.failures[0]
            ET.SubElement(
                case, "failure", message=f"step {first.step}: {first.check}: {first.message}"
            ).text = "\n".join(body)
        elif result.status == "error" and result.error is not None:
            ET.SubElement(
                case, "error", message=result.error.message, type=result.error.code
            ).text = result.error.render()
    for suite in suites.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
        suite.set("errors", str(sum(c.find("error") is not None for c in cases)))
        suite.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
