import re

import pytest

from perfpost import units
from perfpost.units import (
    UnitError,
    format_bytes,
    format_seconds,
    format_value,
    human_unit_factor,
    parse_size,
    rate_scale,
    seconds_scale,
    sig,
    to_per_second,
    to_seconds,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512", 512),
        (4096, 4096),
        ("4k", 4096),
        ("4K", 4096),
        ("10kB", 10_000),
        ("1M", 2**20),
        ("1MB", 10**6),
        ("1MiB", 2**20),
        ("2G", 2 * 2**30),
        ("1.5M", 1_572_864),
        ("1b", 512),
        ("0", 0),
    ],
)
def test_parse_size_follows_dd_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "10 parsecs", "-1", "1.3", "4kk", True])
def test_parse_size_rejects_what_dd_would_not_read(text):
    with pytest.raises(UnitError):
        parse_size(text)


def test_human_units_match_coreutils_output():
    assert human_unit_factor("MB") == 1e6
    assert human_unit_factor("MiB") == 2**20
    assert human_unit_factor("kB") == 1e3
    with pytest.raises(UnitError):
        human_unit_factor("parsec")


def test_rate_scale_picks_one_unit_for_a_column():
    assert rate_scale([164e6, 734e6, 1.9e9]) == ("MB/s", 1e6)
    assert rate_scale([2e9, 3e9]) == ("GB/s", 1e9)
    assert format_bytes(102_400_000) == "102 MB"
    assert sig(0.74912, 3) == "0.749"
    assert sig(20712.3, 3) == "20,712"


# ---------------------------------------------------------------------------- time units


@pytest.mark.parametrize(
    ("value", "unit", "seconds"),
    [
        ("0.708", "microseconds", 7.08e-7),  # not "seconds": the whole word decides
        ("28.51", "milliseconds", 0.02851),
        ("5.06", "milliseconds", 0.00506),  # the printed decimal, not its double, is scaled
        ("2", "nanoseconds", 2e-9),
        ("1.5", "minutes", 90.0),
        ("2", "hours", 7200.0),
        ("1", "day", 86400.0),
        (3.0, "second", 3.0),
    ],
)
def test_to_seconds_reads_the_whole_unit_word(value, unit, seconds):
    assert to_seconds(value, unit) == seconds


@pytest.mark.parametrize(
    ("unit", "per_second"),
    [
        ("events/second", 3.0),
        ("calls/second", 3.0),
        ("events/millisecond", 3000.0),
        ("events/microsecond", 3e6),
        ("events/nanosecond", 3e9),
        ("events/minute", 0.05),
        ("calls/hour", 3 / 3600),
    ],
)
def test_to_per_second_reads_the_whole_rate_unit(unit, per_second):
    assert to_per_second("3", unit) == per_second


@pytest.mark.parametrize(
    "unit", ["", "ms", "msec", "secs", "millis", "Milliseconds", "microseconds ", "fortnights"]
)
def test_a_time_unit_that_is_not_a_whole_known_word_is_refused_by_name(unit):
    with pytest.raises(UnitError, match=re.escape(repr(unit))):
        to_seconds("1", unit)


@pytest.mark.parametrize("unit", ["second", "events", "bytes/second", "events/sec", "events/"])
def test_a_rate_unit_that_is_not_events_or_calls_per_a_time_unit_is_refused(unit):
    with pytest.raises(UnitError, match="unknown"):
        to_per_second("1", unit)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.0007, "700 us"),
        (0.02851, "28.5 ms"),
        (7.08e-7, "708 ns"),
        (0.0123, "12.3 ms"),
        (1.5, "1.5 s"),
        (123.4, "123 s"),
        (0.0, "0 s"),
    ],
)
def test_times_are_shown_with_the_prefix_that_suits_them(seconds, shown):

    assert format_seconds(seconds) == shown
    assert format_value(seconds, "s", cell=True) == shown
    assert format_value(seconds, "s") == shown


def test_a_column_of_times_gets_one_unit_from_its_median():
    from perfpost.analysis import plots

    assert seconds_scale([0.028, 0.0285, 0.031]) == ("ms", 1e-3)
    assert seconds_scale([7e-7, 0.0007, 0.0009]) == ("us", 1e-6)
    assert seconds_scale([2.0, 30.0]) == ("s", 1.0)
    assert plots.axis_unit("s", [0.028, 0.0285, 0.031]) == ("ms", 1e-3)
    assert format_seconds(0.0007, ("ms", 1e-3)) == "0.7 ms"


def test_byte_seconds_are_shown_in_si_units():
    from perfpost.analysis import plots

    assert format_value(15_256_780_800.0, "B*s") == "15.3 GB*s"
    assert plots.axis_unit("B*s", [1.5e10]) == ("GB*s", 1e9)


def test_a_figure_names_a_rate_of_operations_as_the_tables_do():
    from perfpost.analysis import plots

    # The results table's header and every sentence say ops/s; an axis said 1/s.
    assert format_value(41.6, "1/s") == "41.6 ops/s"
    assert plots.axis_unit("1/s", [41.6]) == ("ops/s", 1.0)


@pytest.mark.parametrize(
    ("value", "unit", "scale", "cell", "shown"),
    [
        # 1,830,000,000 B/s is 1.83 GB/s (SI, as dd prints); in a GB/s column, 1.83.
        (1.83e9, "B/s", None, False, "1.83 GB/s"),
        (1.83e9, "B/s", ("GB/s", 1e9), True, "1.83"),
        (7.45e8, "B/s", ("GB/s", 1e9), False, "0.745 GB/s"),
        (6341.0, "1/s", None, False, "6,341 ops/s"),
        (6341.0, "1/s", None, True, "6,341"),
        (102_400_000.0, "B", None, True, "102 MB"),
        (0.0285, "s", None, True, "28.5 ms"),
        (12.0, "vcore*s", None, False, "12 vcore*s"),
        (5.0, "count", None, False, "5"),
        (float("nan"), "B/s", None, False, "n/a"),
    ],
)
def test_one_formatter_for_values_with_units(value, unit, scale, cell, shown):
    assert format_value(value, unit, scale, cell=cell) == shown


def test_a_whole_number_off_by_a_scaling_rounding_error_reads_whole():
    # 0.287 s shown in ms (divided by 0.001): IEEE doubles make it 286.99999999999994,
    # which read "287.0" beside its column's 257 and 220; it reads 287.
    assert 0.287 / 0.001 != 287
    assert sig(0.287 / 0.001, 4) == "287"
    assert sig(0.257 / 0.001, 4) == "257"
    assert sig(287.5, 4) == "287.5"
    assert sig(1.0003, 3) == "1.00"


@pytest.mark.parametrize(
    ("n", "noun", "plural", "said"),
    [(1, "cell", None, "1 cell"), (4, "cell", None, "4 cells"), (0, "run", None, "0 runs"),
     (2, "sync", "syncs", "2 syncs"), (3, "copy", "copies", "3 copies")],
)  # fmt: skip
def test_a_count_takes_the_noun_a_person_writes_with_it(n, noun, plural, said):
    from perfpost.units import counted

    assert counted(n, noun, plural) == said


def test_items_are_listed_as_a_sentence_lists_them():
    assert units.listed(["h1"]) == "h1"
    assert units.listed(["h1", "h2"]) == "h1 and h2"
    assert units.listed(["h1", "h2", "h3"]) == "h1, h2 and h3"
