"""perfpost.glue.scheduler: one pending wake-up of Snakemake's scheduler at a time."""

import inspect
import threading
import time
from types import SimpleNamespace

from perfpost.glue import scheduler


def _fake() -> SimpleNamespace:
    own = []
    fake = SimpleNamespace(_open_jobs=threading.Semaphore(0))
    fake._schedule_reevalutation = lambda delay: own.append(delay)
    fake.own = own
    return fake


def _wakeups(sem: threading.Semaphore) -> int:
    n = 0
    while sem.acquire(blocking=False):
        n += 1
    return n


# A timer of 0.2 s may fire late on a busy machine: each test waits up to WAIT for a wake-up
# it expects, then SETTLE more for any it must not see (every timer of a batch is started
# within microseconds of the first, so they fire together).
WAIT, SETTLE = 20.0, 0.5


def test_snakemakes_own_method_wakes_the_scheduler_once_per_ask():
    """The premise: fifty asks within the delay, fifty passes of the scheduler."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    fake = _fake()
    for _ in range(50):
        getattr(JobScheduler, scheduler.METHOD)(fake, 0.2)
    assert all(fake._open_jobs.acquire(timeout=WAIT) for _ in range(50))


def test_fifty_asks_while_one_is_pending_wake_the_scheduler_once():
    fake = _fake()
    assert scheduler.coalesce_wakeups(fake)
    for _ in range(50):
        fake._schedule_reevalutation(0.2)
    assert _wakeups(fake._open_jobs) == 0  # not before the delay
    assert fake._open_jobs.acquire(timeout=WAIT)
    time.sleep(SETTLE)
    assert _wakeups(fake._open_jobs) == 0  # Snakemake's own would have woken it 49 more times
    assert fake.own == []  # Snakemake's method is no longer called


def test_an_ask_after_the_wakeup_gets_a_timer_of_its_own():
    fake = _fake()
    scheduler.coalesce_wakeups(fake)
    fake._schedule_reevalutation(0.05)
    assert fake._open_jobs.acquire(timeout=WAIT)
    fake._schedule_reevalutation(0.05)
    assert fake._open_jobs.acquire(timeout=WAIT)


def test_the_timer_does_not_hold_up_the_process_exit():
    fake = _fake()
    scheduler.coalesce_wakeups(fake)
    before = set(threading.enumerate())
    fake._schedule_reevalutation(30)
    (timer,) = set(threading.enumerate()) - before
    assert timer.daemon
    timer.cancel()


def test_a_scheduler_without_the_method_is_left_as_it_is():
    assert not scheduler.coalesce_wakeups(None)
    assert not scheduler.coalesce_wakeups(SimpleNamespace(_open_jobs=threading.Semaphore(0)))


def test_the_installed_snakemake_wakes_its_scheduler_through_the_method_replaced():
    """Should Snakemake rename it, the replacement would do nothing unseen: this fails."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert callable(getattr(JobScheduler, scheduler.METHOD, None))
    source = inspect.getsource(JobScheduler.schedule)
    assert f"self.{scheduler.METHOD}(" in source
    assert "_open_jobs.acquire()" in source
