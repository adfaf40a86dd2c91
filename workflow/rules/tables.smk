# Cell records -> tidy tables (CSV, Parquet) and the per-cell status table.


rule tables:
    input:
        lambda wc: attempts.current_records(PLAN, wc.experiment, checkpoints),
    output:
        csv=report(
            paths.TIDY_CSV,
            caption="../report/tidy.rst",
            category="{experiment}",
            subcategory="data",
            labels={"table": "tidy results"},
        ),
        parquet=paths.TIDY_PARQUET,
        schema=paths.TIDY_SCHEMA,
        cells=report(
            paths.CELLS_CSV,
            caption="../report/cells.rst",
            category="{experiment}",
            subcategory="data",
            labels={"table": "cells"},
        ),
        series=paths.SERIES_CSV,
        steady=paths.STEADY_CSV,
        resources=paths.RESOURCES_CSV,
        resources_window=paths.RESOURCES_WINDOW_CSV,
        resources_schema=paths.RESOURCES_SCHEMA,
        profile=paths.PROFILE_CSV,
    log:
        paths.TABLES_LOG,
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    params:
        axes=lambda wc: glue.axes_json(PLAN, wc.experiment),
        out_dir=lambda wc: paths.fill(paths.EXPERIMENT_DIR, experiment=wc.experiment),
    shell:
        glue.served(
            "tables --axes {params.axes:q} --out-dir {params.out_dir:q} {input:q}"
            " > {log:q} 2>&1"
        )


# Finished runs -> the history store (append-only, outside results/: a nightly job's clones
# share it); the receipt says what this experiment's runs added.
rule history:
    input:
        tidy=paths.TIDY_PARQUET,
        cells=paths.CELLS_CSV,
        env=lambda wc: glue.env_files(PLAN, wc.experiment),
    output:
        paths.HISTORY_RECEIPT,
    log:
        paths.HISTORY_LOG,
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    params:
        exp=lambda wc: glue.experiment_json(PLAN, wc.experiment),
        store=PLAN.history or "",
    shell:
        glue.served(
            "history-add --experiment {params.exp:q} --tidy {input.tidy:q}"
            " --cells {input.cells:q} --env {input.env:q} --store {params.store:q}"
            " --out {output:q} > {log:q} 2>&1"
        )
