# Cell records -> tidy tables (CSV, Parquet) and the per-cell status table.


rule tables:
    input:
        lambda wc: pw.current_records(PLAN, wc.experiment),
    output:
        csv=paths.TIDY_CSV,
        parquet=paths.TIDY_PARQUET,
        schema=paths.TIDY_SCHEMA,
        cells=paths.CELLS_CSV,
        series=paths.SERIES_CSV,
    log:
        paths.TABLES_LOG,
    conda:
        "../../envs/perfpost.yaml"
    params:
        axes=lambda wc: pw.axes_json(PLAN, wc.experiment),
        out_dir=lambda wc: paths.fill(paths.EXPERIMENT_DIR, experiment=wc.experiment),
    shell:
        "perfpost tables --axes {params.axes:q} --out-dir {params.out_dir:q} {input:q}"
        " > {log:q} 2>&1"
