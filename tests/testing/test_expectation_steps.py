"""``expectations: {rule: count}`` on a step of a ``*.test.yaml`` file (docs/testing.md):
loaded with its positions and names checked against the pipeline's rules; on Spark, the
counts of the step's micro-batch compared exactly (a right count passes, any other count
fails naming the rule, with both values)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlstream.diagnostics.errors import SqlStreamError

PIPELINE = """
CREATE STREAM flights (origin STRING, dep_time INT, dep_delay DOUBLE, time_hour TIMESTAMP,
    CONSTRAINT known_origin EXPECT (origin IN ('EWR', 'JFK', 'LGA')),
    CONSTRAINT departed EXPECT (dep_time IS NOT NULL) ON VIOLATION DROP ROW
) WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK out (CONSTRAINT punctual EXPECT (dep_delay <= 15))
    WITH (connector = 'files', path = 'out', format = 'json');
INSERT INTO out SELECT origin, dep_delay FROM flights;
"""

TEST = """pipeline: p.ssql
tests:
  - name: counted
    steps:
      - input:
          flights:
            - {{origin: EWR, dep_time: 517, dep_delay: 2.0}}
            - {{origin: BOS, dep_time: null, dep_delay: null}}
            - {{origin: SFO, dep_time: 600, dep_delay: 30.0}}
            - {{origin: null, dep_time: 601, dep_delay: null}}
        expect:
          out:
            - {{origin: EWR, dep_delay: 2.0}}
            - {{origin: SFO, dep_delay: 30.0}}
            - {{origin: null, dep_delay: null}}
        expectations: {{known_origin: {known}, departed: 1, punctual: 1}}
"""


def _files(tmp_path: Path, known: object = 2, rule: str = "known_origin") -> Path:
    (tmp_path / "p.ssql").write_text(PIPELINE)
    path = tmp_path / "p.test.yaml"
    path.write_text(TEST.format(known=known).replace("known_origin:", f"{rule}:"))
    return path


def test_a_step_names_the_pipelines_rules(tmp_path):
    from sqlstream.testing.loading import load

    test_file, _ = load(_files(tmp_path))
    checks = test_file.cases[0].steps[0].expectations
    assert [(c.query, c.value) for c in checks] == [
        ("known_origin", 2),
        ("departed", 1),
        ("punctual", 1),
    ]
    assert checks[0].key_span is not None and checks[0].key_span.line == 16
    with pytest.raises(SqlStreamError) as unknown:
        load(_files(tmp_path, rule="known_orgin"))
    assert unknown.value.code == "SS201" and "did you mean 'known_origin'" in unknown.value.message
    with pytest.raises(SqlStreamError) as not_a_count:
        load(_files(tmp_path, known="'two'"))
    assert "counts of violating rows" in not_a_count.value.message


@pytest.mark.spark
@pytest.mark.parametrize("known,status", [(2, "passed"), (1, "failed"), (3, "failed")])
def test_counts_are_compared_exactly(spark, tmp_path, known, status):
    from sqlstream.testing.harness import Harness
    from sqlstream.testing.loading import load

    test_file, pipelines = load(_files(tmp_path, known))
    case = test_file.cases[0]
    result = Harness(spark, tmp_path / "work").run(test_file, case, pipelines[case.name])
    assert result.status == status, [f.message for f in result.failures]
    if status == "failed":
        (failure,) = result.failures
        assert failure.check == "expectation known_origin"
        assert (failure.expected, failure.actual) == (known, 2)


FAILING = """pipeline: p.ssql
tests:
  - name: stops
    steps:
      - input:
          flights: [{origin: EWR, dep_time: 517, dep_delay: 2.0}]
        expect:
          out: [{origin: EWR, dep_delay: 2.0}]
        expectations: {sane: 0}
      - input:
          flights: [{origin: JFK, dep_time: 518, dep_delay: 1301.0}]
        error: SS560
"""


@pytest.mark.spark
def test_a_fail_update_rule_stops_the_step_with_ss560(spark, tmp_path):
    from sqlstream.testing.harness import Harness
    from sqlstream.testing.loading import load

    (tmp_path / "p.ssql").write_text(
        PIPELINE.replace(
            "ON VIOLATION DROP ROW",
            "ON VIOLATION DROP ROW,\n    CONSTRAINT sane EXPECT (dep_delay < 1000) "
            "ON VIOLATION FAIL UPDATE",
        )
    )
    (tmp_path / "p.test.yaml").write_text(FAILING)
    test_file, pipelines = load(tmp_path / "p.test.yaml")
    case = test_file.cases[0]
    result = Harness(spark, tmp_path / "work").run(test_file, case, pipelines[case.name])
    assert result.status == "passed", [f.message for f in result.failures]
    wrong = FAILING.replace("error: SS560", "error: SS501")
    (tmp_path / "p.test.yaml").write_text(wrong)
    test_file, pipelines = load(tmp_path / "p.test.yaml")
    case = test_file.cases[0]
    result = Harness(spark, tmp_path / "work2").run(test_file, case, pipelines[case.name])
    assert result.status == "failed"
    assert any(
        "expectation 'sane'" in f.message and '"dep_delay":1301.0' in f.message
        for f in result.failures
    )
