"""One attempt of a cell, a phase a module, each readable alone and in this order:
:mod:`~perfpost.run.cell.prepare` (everything before the measurement),
:mod:`~perfpost.run.cell.measure` (the measured step beside its companions),
:mod:`~perfpost.run.cell.collect` (logs, after-steps, parsing, service records) and
:mod:`~perfpost.run.cell.record` (one record, however the cell ends, after
:mod:`~perfpost.run.cell.cleanup` left its hosts as they were). What they share is the
cell's :class:`~perfpost.run.cell.attempt.Attempt`; :mod:`~perfpost.run.cell.seats` says which
hosts a cell involves. :mod:`perfpost.run.runner` sequences them."""
