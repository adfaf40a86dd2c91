"""From a config file to the plan, one concern a module: reading the file strictly
(:mod:`~perfpost.plan.loading`), its JSON schemas (:mod:`~perfpost.plan.schema`, the config's in
``config.schema.yaml``; passes kept by :mod:`~perfpost.plan.schemacache`), the checks a schema
cannot express (:mod:`~perfpost.plan.checks`), the cell matrix (:mod:`~perfpost.plan.matrix`),
each cell's params and clusters (:mod:`~perfpost.plan.params`, :mod:`~perfpost.plan.clusters`),
the order of runs (:mod:`~perfpost.plan.order`), the plan itself (:mod:`~perfpost.plan.model`)
built by :mod:`~perfpost.plan.build`, and each job's self-contained spec
(:mod:`~perfpost.plan.specs`)."""
