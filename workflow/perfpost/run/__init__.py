"""Running cells on hosts: a host's interface (:mod:`~perfpost.run.hosts`, over SSH in
:mod:`~perfpost.run.remote`), the scripts it runs (:mod:`~perfpost.run.hostscript`), one cell's
run to its record (:mod:`~perfpost.run.runner`, phase by phase in :mod:`~perfpost.run.cell`),
what a host is (:mod:`~perfpost.run.envinfo`) and tying jobs to the Snakemake run that started
them (:mod:`~perfpost.run.lifeline`)."""
