"""From a config file to the plan: every experiment's cells, and each job's self-contained
spec (:mod:`perfpost.plan.config`), the cell matrix (:mod:`perfpost.plan.matrix`), and the
config's JSON schema (``config.schema.yaml``)."""
