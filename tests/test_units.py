import pytest

from autotune.errors import InputError
from autotune.units import format_size, parse_size, parse_size_range


@pytest.mark.parametrize("text, value", [("8", 8), ("4k", 4096), ("64kb", 65536), ("1m", 1 << 20),
                                         ("2MiB", 2 << 20), ("1g", 1 << 30)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "0", "-4", "4q", "1.5k", "4 k b", "3g"])
def test_parse_size_rejects(text):
    with pytest.raises(InputError):
        parse_size(text)


def test_range_gives_powers_of_two():
    assert parse_size_range("1:16") == (1, 2, 4, 8, 16)
    assert parse_size_range("1:4m")[-1] == 4 << 20
    assert len(parse_size_range("1:4m")) == 23
    assert parse_size_range("3:20") == (4, 8, 16)


def test_list_is_sorted_and_deduplicated():
    assert parse_size_range("64k,8,8,1k") == (8, 1024, 65536)


@pytest.mark.parametrize("text", ["16:8", "5:7", ":", "8:", ","])
def test_range_rejects(text):
    with pytest.raises(InputError):
        parse_size_range(text)


def test_format_size():
    assert format_size(8) == "8 B"
    assert format_size(4096) == "4 KiB"
    assert format_size(3 << 20) == "3 MiB"
    assert format_size(1500) == "1500 B"
