# One job per cell: (experiment, cell, host, repeat), one attempt directory per run.


rule cell:
    input:
        glue.cell_inputs(PLAN),
    # update: a finished record Snakemake runs again because it was killed before it noted
    # the job's end (rerun-incomplete) is not deleted first; run-cell keeps it as it is.
    output:
        update(paths.RECORD),
    log:
        paths.CELL_LOG,
    wildcard_constraints:
        experiment=glue.solo_experiments(PLAN),
    # The cells of one cluster configuration before the next's: few clusters up at once.
    priority: glue.cell_priority(PLAN)
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **HOST_RESOURCES,
    # Not recorded by Snakemake (glue.unrecorded): the cell's attempt already says what it measures.
    params:
        spec=glue.unrecorded(lambda wc: glue.cell_spec(PLAN, wc).param_json()),
        needs=glue.cell_needed(PLAN),
    shell:
        PERFPOST_SERVED
        + " run-cell --spec {params.spec:q} --out {output:q} --needs {params.needs:q}"
        + " > {log:q} 2>&1"


# repeats with a precision target: after each round of a cell's runs on a host, a decision
# (more runs, or enough); the tables wait for the last one. A checkpoint, so Snakemake plans
# the next round's runs once it is made, and an interrupted run resumes from the rounds done.
checkpoint round:
    input:
        lambda wc: attempts.round_inputs(PLAN, wc),
    output:
        paths.ROUND,
    log:
        paths.ROUND_LOG,
    wildcard_constraints:
        experiment=glue.precision_experiments(PLAN),
    # Decided as soon as its runs are made: a decision waiting behind another cell's runs
    # let that cell take every later round first (no interleaving), and behind the next
    # cluster configuration's cells it kept two configurations up at once.
    priority: glue.STEP_PRIORITY
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    params:
        settings=lambda wc: attempts.round_settings(PLAN, wc),
    shell:
        glue.served(
            "round --settings {params.settings:q} --out {output:q} {input:q} > {log:q} 2>&1"
        )


# A host's environment, captured after an experiment's cells ran and were tabulated (again
# whenever one re-runs, never in a run that measured nothing), so the post describes the
# machine as it was; it holds the host like a cell, to stay out of measurements. It waits
# for the one status table, not for each record: naming every record again cost Snakemake
# about a second on each plan of 10,000 cells.
rule env:
    input:
        cells=paths.CELLS_CSV,
        window=paths.RESOURCES_WINDOW_CSV,
    output:
        paths.ENV_JSON,
    log:
        paths.ENV_LOG,
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **HOST_RESOURCES,
    params:
        host=lambda wc: glue.host_json(PLAN, wc.host),
    shell:
        glue.served(
            "env --host {params.host:q} --window {input.window:q} --out {output:q}"
            " > {log:q} 2>&1"
        )


# start_together experiments: one job per (cell, repeat) runs every host at the same moment.
for group in glue.together(PLAN):

    rule:
        name:
            group.rule
        input:
            group.tools,
        output:
            [update(o) for o in group.outputs],
        log:
            group.log,
        conda:
            "../../envs/perfpost.yaml"
        resources:
            **group.resources,
        params:
            specs=glue.unrecorded(group.specs),
            needs=glue.unrecorded(group.needs),
        shell:
            PERFPOST_SERVED
            + " run-together --specs {params.specs:q} --outs {output:q} --needs {params.needs:q}"
            + " > {log:q} 2>&1"


# Runtimes from Maven Central (Ozone's freon and vapor, a Hadoop client for teragen), for
# hosts that have none installed: localhost by default.
# A failed provisioning is an outcome too (exit 0): the cells that need the runtime fail with
# its reason, each with a record, and the rest of the run goes on; in the next run, the first
# cell that needs it tries again (perfpost.provision.failed_outcomes).
rule provision:
    output:
        paths.PROVISION,
    log:
        paths.PROVISION_LOG,
    wildcard_constraints:
        tool=provisioning.provisioned_names(),
        pom="[0-9a-f]{16}",
    # Before any cell: cells are ordered by cluster, and one waiting for its tool would
    # let another cluster's cells in between (two clusters up at once).
    priority: glue.STEP_PRIORITY
    localrule: True
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    params:
        cache=provisioning.provision_cache(PLAN),
    shell:
        "perfpost provision {wildcards.tool:q} --version {wildcards.version:q}"
        " --cache {params.cache:q} --log {log:q} --outcome {output:q} > /dev/null"
