"""One pending wake-up of Snakemake's scheduler at a time, not one more per job.

Snakemake's job scheduler (9.x, ``JobScheduler.schedule``) ends every pass that leaves jobs
waiting by starting a ``threading.Timer`` of its job rate limiter's timespan (1 s, from the
default ``--max-jobs-per-timespan 100/1s``) that wakes it again, whether or not a timer is
already pending. A pass woken by a finished job adds a timer; a pass woken by a timer adds
one back. So after n finished jobs, n timers run and the scheduler passes over every waiting
job n times a second: its CPU grows with the square of the jobs. perfpost's jobs wait most of
the time (a host runs one cell at a time), so it showed: 119 dd cells took Snakemake's own
process 5.8 CPU-seconds, 2,559 passes in 39 s, and 60 one-at-a-time jobs of a plain Snakefile
5.6 CPU-seconds against 2.2 with timers ten times as long.

The timers only matter when the rate limit binds (100 jobs a second): a finished job wakes
the scheduler itself. :func:`coalesce_wakeups` keeps Snakemake's rule, a pass within the
timespan of any pass that asked for one, with at most one timer pending: a pass that asks
while one is pending gets that one's, which comes sooner. Its timer is a daemon thread, so
the process's exit does not wait on it (Snakemake's own could hold it up to a timespan).
A Snakemake without this method is left as it is.
"""

from __future__ import annotations

import threading
from typing import Any

METHOD = "_schedule_reevalutation"  # sic: Snakemake's own spelling


def coalesce_wakeups(scheduler: Any) -> bool:
    """Give ``scheduler`` (Snakemake's ``JobScheduler``) one pending wake-up at a time;
    False where it has no such method to replace, or no semaphore its passes wait on."""
    if not callable(getattr(scheduler, METHOD, None)) or not hasattr(scheduler, "_open_jobs"):
        return False
    lock = threading.Lock()
    pending = False

    def fire() -> None:
        nonlocal pending
        with lock:
            pending = False
        scheduler._open_jobs.release()

    def wake_within(delay: float) -> None:
        nonlocal pending
        with lock:
            if pending:
                return
            pending = True
        timer = threading.Timer(delay, fire)
        timer.daemon = True
        timer.start()

    setattr(scheduler, METHOD, wake_within)
    return True
