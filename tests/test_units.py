import pytest

from perfpost.units import UnitError, format_bytes, human_unit_factor, parse_size, rate_scale, sig


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
