"""The dd parser on real logs captured from real runs (tests/data/dd/capture.sh)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfpost.errors import ParseError
from perfpost.tools import dd
from tests.conftest import read_dd_log


def metrics(text: str, name: str = "x.log") -> dict[str, float]:
    return {m.name: m.value for m in dd.parse_text(text, name)}


def printed(text: str) -> tuple[int, float, float]:
    """bytes, seconds and B/s as printed in the summary line, read independently of the parser."""
    m = list(re.finditer(r"^(\d+) \w+ .*?, ([\d.,e-]+) s, ([\d.,]+) (\w+)/s$", text, re.M))[-1]
    factor = {"kB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(4)]
    return (
        int(m.group(1)),
        float(m.group(2).replace(",", ".")),
        float(m.group(3).replace(",", ".")) * factor,
    )


@pytest.mark.parametrize(
    "name",
    [
        "write-fsync.log",
        "write-direct.log",
        "read.log",
        "progress.log",
        "partial-records.log",
        "locale-de.log",
        "one-byte.log",
    ],
)
def test_real_summaries_parse_to_the_printed_numbers(dd_log, name):
    text = dd_log(name)
    nbytes, secs, rate = printed(text)
    m = metrics(text, name)
    assert m["bytes"] == nbytes
    assert m["elapsed"] == pytest.approx(secs)
    # dd rounds its rate to 2-3 significant digits; ours is bytes / elapsed, exactly.
    assert m["throughput"] == pytest.approx(rate, rel=0.06)
    assert m["throughput"] == pytest.approx(nbytes / secs)


def test_records_are_counted(dd_log):
    m = metrics(dd_log("partial-records.log"))
    assert (m["records_in_full"], m["records_in_partial"]) == (2, 1)
    assert (m["records_out_full"], m["records_out_partial"]) == (2, 1)


def test_progress_redraws_are_not_the_result(dd_log):
    text = dd_log("progress.log")
    assert "\r" in text  # the real log has status=progress redraws
    m = metrics(text)
    assert m["bytes"] == 125829120000
    assert m["records_out_full"] == 120000


def test_exponent_seconds(dd_log):
    m = metrics(dd_log("one-byte.log"))
    assert m["bytes"] == 1
    assert m["elapsed"] < 1e-3


def test_zero_bytes_is_zero_not_an_error(dd_log):
    m = metrics(dd_log("zero-bytes.log"))
    assert m["bytes"] == 0
    assert m["throughput"] == 0


def test_old_coreutils_form_from_the_reference_post():
    # Published in the ratis-log-separation post (coreutils before 8.24: one human size).
    text = (
        "100000+0 records in\n100000+0 records out\n"
        "1024000000 bytes (1.0 GB) copied, 6.22637 s, 164 MB/s\n"
    )
    m = metrics(text)
    assert m["bytes"] == 1024000000
    assert m["throughput"] == pytest.approx(1024000000 / 6.22637)


@pytest.mark.parametrize(
    ("name", "line", "fragment"),
    [
        ("failed-open.log", 1, "failed to open"),
        ("failed-nospace.log", 1, "No space left on device"),
        ("truncated.log", 2, "no dd summary line"),
        ("killed.log", 1, "ends mid-run"),
        ("busybox.log", 2, "no dd summary line"),
    ],
)
def test_failed_and_cut_logs_are_errors_naming_file_and_line(dd_log, name, line, fragment):
    with pytest.raises(ParseError) as e:
        dd.parse_text(dd_log(name), f"logs/{name}")
    assert e.value.source == f"logs/{name}"
    assert e.value.line == line
    assert fragment in str(e.value)


def test_empty_log_is_an_error():
    with pytest.raises(ParseError, match="empty log"):
        dd.parse_text("", "empty.log")


def test_foreign_log_is_an_error():
    with pytest.raises(ParseError, match="not from dd"):
        dd.parse_text("2024-01-01 INFO Freon: Progress: 2.60 % (26 out of 1000)\n", "f.log")


def test_concurrent_readers_sum_bytes_over_the_slowest(dd_log):
    logs = {"reader-1.log": dd_log("read.log"), "reader-2.log": dd_log("write-direct.log")}
    m = {x.name: x.value for x in dd.parse_cell(logs)}
    b1, s1, _ = printed(logs["reader-1.log"])
    b2, s2, _ = printed(logs["reader-2.log"])
    assert m["bytes"] == b1 + b2
    assert m["elapsed"] == pytest.approx(max(s1, s2))
    assert m["throughput"] == pytest.approx((b1 + b2) / max(s1, s2))
    assert m["readers"] == 2
    assert m["reader_throughput_min"] == pytest.approx(min(b1 / s1, b2 / s2))
    assert m["reader_throughput_max"] == pytest.approx(max(b1 / s1, b2 / s2))


def test_one_bad_reader_fails_the_cell(dd_log):
    with pytest.raises(ParseError) as e:
        dd.parse_cell({"reader-1.log": dd_log("read.log"), "reader-2.log": dd_log("killed.log")})
    assert e.value.source == "reader-2.log"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_parser_never_crashes_and_never_invents(text):
    try:
        m = metrics(text)
    except ParseError:
        return
    # Whatever parsed must be backed by a summary line and a records-out line in the text.
    assert str(int(m["bytes"])) in text
    assert "+" in text


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(min_value=0, max_value=200))
def test_every_prefix_of_a_real_log_parses_fully_or_fails(cut):
    text = read_dd_log("write-fsync.log")
    prefix = text[: min(cut, len(text))]
    try:
        m = metrics(prefix)
    except ParseError:
        return
    # Only a prefix that holds the whole summary can parse, and then to the full numbers.
    assert m["bytes"] == 102400000


def test_log_cut_between_records_out_and_final_summary_is_not_a_progress_result(dd_log):
    text = dd_log("progress.log")
    cut = text[: text.rindex("125829120000")]  # progress redraws and records lines survive
    with pytest.raises(ParseError, match="no dd summary line"):
        dd.parse_text(cut, "cut.log")


def test_no_time_and_an_infinite_rate_is_an_error_not_an_infinite_throughput():
    # Older coreutils print "Infinity B/s" when their clock did not move.
    text = "1+0 records in\n1+0 records out\n512 bytes copied, 0 s, Infinity B/s\n"
    with pytest.raises(ParseError, match="no finite time and rate") as e:
        dd.parse_text(text, "z.log")
    assert (e.value.source, e.value.line) == ("z.log", 3)
    finite = "1+0 records in\n1+0 records out\n512 bytes copied, 0 s, 1.0 MB/s\n"
    assert metrics(finite)["throughput"] == 1e6  # dd's own rate when it measured no time


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    cut_reader=st.sampled_from(["reader-1.log", "reader-2.log"]),
    back=st.integers(0, 110),
)
def test_a_cell_with_one_reader_cut_fails_naming_it_or_reads_the_whole_cell(cut_reader, back):
    logs = {
        "reader-1.log": read_dd_log("read.log"),
        "reader-2.log": read_dd_log("write-direct.log"),
    }
    whole = {m.name: m.value for m in dd.parse_cell(logs)}
    logs[cut_reader] = logs[cut_reader][: max(len(logs[cut_reader]) - back, 0)]
    try:
        got = {m.name: m.value for m in dd.parse_cell(logs)}
    except ParseError as e:
        failed = e.source
    else:
        assert got == whole
        return
    assert failed == cut_reader
