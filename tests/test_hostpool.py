"""perfpost.hostpool: several hosts at once, never more than the bound."""

from __future__ import annotations

import threading
import time

import pytest

from perfpost import hostpool


def test_at_most_the_bound_run_at_once_and_results_keep_the_items_order():
    running, most = 0, 0
    lock = threading.Lock()

    def one(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)  # long enough for every worker to be inside at the same time
        with lock:
            running -= 1
        return i * i

    assert hostpool.each(one, range(20), limit=4) == [i * i for i in range(20)]
    assert most == 4  # 20 items, 4 workers: the pool was full, never fuller
    assert hostpool.each(one, [], limit=4) == []


def test_a_failure_is_raised_once_every_other_item_has_ended():
    ended: list[int] = []

    def one(i: int) -> int:
        if i == 0:
            raise ValueError("host 0 is gone")
        time.sleep(0.05)
        ended.append(i)
        return i

    with pytest.raises(ValueError, match="host 0 is gone"):
        hostpool.each(one, range(6), limit=3)
    assert sorted(ended) == [1, 2, 3, 4, 5]  # none was left running behind the error
