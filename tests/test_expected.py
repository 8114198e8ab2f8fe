"""tests/expected.py: listed cases must fail (xfail), listed cases that pass fail the run,
unlisted failures propagate."""

from __future__ import annotations

import pytest

from tests.expected import ExpectedFailures


@pytest.fixture
def listed(tmp_path):
    p = tmp_path / "expected.txt"
    p.write_text("# comment\n\ncase_a  why it fails\ncase_b\n")
    return ExpectedFailures(str(p))


def test_parses_names_and_reasons(listed):
    assert listed.items == {"case_a": "why it fails", "case_b": "no reason given"}
    assert "case_a" in listed and "case_c" not in listed


def test_listed_failure_is_an_xfail_with_its_reason(listed):
    with pytest.raises(pytest.xfail.Exception, match="why it fails"):
        with listed.check("case_a"):
            raise ValueError("boom")


def test_listed_case_that_passes_fails_the_run(listed):
    with pytest.raises(pytest.fail.Exception, match="passes now: remove its line"):
        with listed.check("case_a"):
            pass


def test_unlisted_failure_propagates(listed):
    with pytest.raises(ValueError, match="boom"):
        with listed.check("case_c"):
            raise ValueError("boom")
    with listed.check("case_c"):  # and an unlisted pass is just a pass
        pass


def test_missing_file_lists_nothing(tmp_path):
    assert ExpectedFailures(str(tmp_path / "none.txt")).items == {}


def test_also_excuses_a_failure_without_requiring_it(listed, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("case_c  fails in the interpreter too\n")
    interp = ExpectedFailures(str(other))
    with pytest.raises(pytest.xfail.Exception, match="interpreter too"):
        with listed.check("case_c", also=interp):
            raise ValueError("boom")
    with listed.check("case_c", also=interp):  # passing here is fine
        pass
    with pytest.raises(pytest.fail.Exception, match="passes now"):
        with listed.check("case_a", also=interp):
            pass


def test_items_from_a_dict_and_unknown_names(tmp_path):
    e = ExpectedFailures("tests/x.py", {"a": "why"})
    assert e.get("a") == "why" and e.unknown(["b"]) == ["a"] and e.unknown(["a"]) == []
