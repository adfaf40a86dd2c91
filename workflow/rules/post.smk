# Tidy tables -> figures -> the post, one per experiment.


rule figures:
    input:
        tidy=paths.TIDY_PARQUET,
        cells=paths.CELLS_CSV,
        series=paths.SERIES_CSV,
        steady=paths.STEADY_CSV,
        resources=paths.RESOURCES_CSV,
        resources_window=paths.RESOURCES_WINDOW_CSV,
    output:
        report(
            directory(paths.FIGURES_DIR),
            patterns=["{name}.png"],
            caption="../report/figure.rst",
            category="{experiment}",
            subcategory="figures",
            labels={"figure": "{name}"},
        ),
    log:
        paths.FIGURES_LOG,
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    params:
        exp=lambda wc: glue.experiment_json(PLAN, wc.experiment),
    shell:
        glue.served(
            "figures --experiment {params.exp:q} --tidy {input.tidy:q}"
            " --series {input.series:q} --steady {input.steady:q}"
            " --resources {input.resources:q} --resources-window {input.resources_window:q}"
            " --cells {input.cells:q} --out-dir {output:q}"
            " > {log:q} 2>&1"
        )


rule post:
    input:
        tidy=paths.TIDY_PARQUET,
        cells=paths.CELLS_CSV,
        steady=paths.STEADY_CSV,
        figures=paths.FIGURES_DIR,
        resources=paths.RESOURCES_WINDOW_CSV,
        profile=paths.PROFILE_CSV,
        env=lambda wc: glue.env_files(PLAN, wc.experiment),
    output:
        post=paths.POST,
        notebook=paths.POST_NOTEBOOK,
        data=paths.POST_DATA,
        comparisons=report(
            paths.POST_COMPARISONS,
            caption="../report/comparisons.rst",
            category="{experiment}",
            subcategory="comparisons",
            labels={"table": "comparisons"},
        ),
        steady=paths.POST_STEADY,
        resources=paths.POST_RESOURCES,
    log:
        paths.POST_LOG,
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    params:
        exp=lambda wc: glue.experiment_json(PLAN, wc.experiment),
    shell:
        glue.served(
            "post --experiment {params.exp:q} --tidy {input.tidy:q}"
            " --cells {input.cells:q} --steady {input.steady:q} --figures {input.figures:q}"
            " --env {input.env:q}"
            " --out {output.post:q} --data {output.data:q}"
            " --comparisons {output.comparisons:q} --steady-data {output.steady:q}"
            " --resources {input.resources:q} --resources-data {output.resources:q}"
            " --profile {input.profile:q}"
            " > {log:q} 2>&1"
        )


# The post and its notebook as HTML pages, so `snakemake --report` holds what a reader reads.
rule html:
    input:
        post=paths.POST,
        notebook=paths.POST_NOTEBOOK,
        figures=paths.FIGURES_DIR,
    output:
        report(
            paths.POST_HTML,
            caption="../report/post.rst",
            category="{experiment}",
            subcategory="post",
            labels={"page": "post and notebook"},
        ),
    log:
        paths.HTML_LOG,
    conda:
        "../../envs/perfpost.yaml"
    resources:
        **CONTROLLER,
    shell:
        glue.served("html --post {input.post:q} --out {output:q} > {log:q} 2>&1")
