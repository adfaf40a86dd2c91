# One job per cell: (experiment, cell, host, repeat), one attempt directory per run.


rule cell:
    output:
        paths.RECORD,
    log:
        paths.CELL_LOG,
    params:
        spec=lambda wc: pw.cell_spec(PLAN, wc).to_json(),
    resources:
        **HOST_RESOURCES,
    conda:
        "../../envs/perfpost.yaml"
    shell:
        "{PERFPOST} run-cell --spec {params.spec:q} --out {output:q} > {log:q} 2>&1"


rule env:
    output:
        paths.ENV_JSON,
    log:
        paths.ENV_LOG,
    params:
        host=lambda wc: pw.host_json(PLAN, wc.host),
    conda:
        "../../envs/perfpost.yaml"
    shell:
        "{PERFPOST} env --host {params.host:q} --out {output:q} > {log:q} 2>&1"
