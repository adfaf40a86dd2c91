"""From records to the post: tidy tables (:mod:`~perfpost.analysis.tidy`), statistics and
comparisons (:mod:`~perfpost.analysis.stats`, :mod:`~perfpost.analysis.compare`), figures
(:mod:`~perfpost.analysis.plots`) and the markdown post (:mod:`~perfpost.analysis.report`,
``templates/``)."""
