# perfpost: a config matrix in, a blog-ready post out.
#   snakemake --cores 6 report     run what is missing or failed, then render the posts
# The rules only declare files; the logic lives in the perfpost package (workflow/perfpost).
from snakemake.utils import min_version

from perfpost.glue import strict_configfile

min_version("9.0")


# Read strictly first: a YAML mistake or a key given twice is named with its line.
configfile: strict_configfile("config/config.yaml")


# snakemake --report report.html: one category per experiment (figures, tables, comparisons).
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# The default target: every experiment's post, after whatever cells are missing or failed.
# Missing records are named too where tables or posts exist: Snakemake skips a deleted
# intermediate file while everything made from it is newer, and a deleted cell must run.
rule report:
    input:
        expand(paths.POST, experiment=list(PLAN.experiments)),
        expand(paths.POST_HTML, experiment=list(PLAN.experiments)),
        expand(paths.HISTORY_RECEIPT, experiment=list(PLAN.experiments)),
        attempts.records_to_name(PLAN),
    localrule: True


include: "workflow/rules/cells.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/post.smk"


# A run that executes jobs: jobs of a killed run are waited for, this run's jobs stop with
# it, and its locks are removed should it be killed (nothing of this while merely reading).
onstart:
    glue.start_run(PLAN, workflow)


# No cluster perfpost started outlives the run, however it ends (a killed run's are stopped
# by its watcher, or by the next run).
onsuccess:
    glue.end_run(PLAN, ok=True)


onerror:
    glue.end_run(PLAN, ok=False)
