"""The one reader of log4j line times, shared by freon's and teragen's parsers."""

import time

import pytest

from perfpost.tools.log4j import timestamp


def local(y, mo, d, h, mi, s):
    """Epoch seconds of a local wall time, by the C library's mktime (not datetime)."""
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


@pytest.mark.parametrize(
    ("line", "digits", "fraction"),
    [
        ("2024-03-05 10:11:12,345 [main] INFO freon.BaseFreonGenerator: ...", None, 0.345),
        ("2024-03-05 10:11:12 INFO freon: no fraction", None, 0.0),
        ("2024-03-05T10:11:12.5 INFO", None, 0.5),
        ("2024-03-05 10:11:12,123456 INFO", None, 0.123456),
        # Hadoop's console: milliseconds, and only milliseconds count.
        ("2024-03-05 10:11:12,345 INFO mapreduce.Job: Running job", 3, 0.345),
        ("2024-03-05 10:11:12,345678 INFO", 3, 0.345),
    ],
)
def test_a_line_time_is_its_local_wall_time(line, digits, fraction):
    assert timestamp(line, digits) == pytest.approx(local(2024, 3, 5, 10, 11, 12) + fraction)


@pytest.mark.parametrize(
    ("line", "digits"),
    [
        ("INFO mapreduce.Job: Running job", None),
        ("2024-13-05 10:11:12,345 INFO", None),  # no month 13
        ("2024-03-05 10:11:12,34 INFO", 3),  # fewer digits than a Hadoop line has
        ("2024-03-05 10:11:12 INFO", 3),
    ],
)
def test_a_line_without_a_time_has_none(line, digits):
    assert timestamp(line, digits) is None
