# Config validation and the matrix, shared by every rule file.
import sys

from perfpost.plan.build import build_plan
from perfpost.plan.checks import check_secrets
from perfpost import paths, glue
from perfpost.glue import attempts, provisioning
from perfpost.errors import ConfigError
from perfpost.plan.loading import message

try:
    # Snakemake's loader keeps the last of two equal keys (two experiments named alike):
    # read each config file strictly first, so such a mistake is named with its line.
    glue.read_strictly(workflow.configfiles)
    PLAN = build_plan(config, cache=paths.CONFIG_CACHE_DIR)
    check_secrets(PLAN)
    PLAN.reproduce = glue.reproduce_command(glue.config_files(workflow))
except ConfigError as e:
    # One line a person reads (file:line: key: what is wrong), not Snakemake's wrapper
    # naming this rule file.
    print(f"perfpost: {message(e, glue.config_files(workflow))}", file=sys.stderr)
    raise SystemExit(1)

glue.ensure_on_path(sys.executable)
# `perfpost` for the cells and the steps after them: a client that hands the command to the
# run's cell server (one process with perfpost and its libraries imported, forked for each).
PERFPOST_SERVED = glue.served_job()
HOST_RESOURCES = glue.host_resources(PLAN, workflow)
# perfpost's own heavy steps wait until no cell measures on this machine, and hold it.
CONTROLLER = glue.controller_resources(PLAN)


wildcard_constraints:
    **paths.WILDCARDS,
