# Config validation and the matrix, shared by every rule file.
import sys

from snakemake.exceptions import WorkflowError

from perfpost import config as pconfig
from perfpost import paths, workflow as pw
from perfpost.errors import ConfigError

try:
    PLAN = pconfig.build_plan(config)
    pconfig.check_secrets(PLAN)
except ConfigError as e:
    raise WorkflowError(str(e)) from None

pw.ensure_on_path(sys.executable)
# Jobs stop with this run if it is killed; what a killed run left behind is cleaned up first.
pw.start_run(workflow)
HOST_RESOURCES = pw.host_resources(PLAN, workflow)


wildcard_constraints:
    **paths.WILDCARDS,
