"""The HDFS kind's configuration: clients reach the NameNode where the config puts it."""

from __future__ import annotations

from perfpost.clusters import base, deployment, hdfs
from perfpost.run.hosts import open_host


def configured(site: dict) -> tuple[deployment.Deployment, dict[str, str]]:
    """The site files and client fields a start would make of ``site`` (no daemon runs)."""
    spec = base.ClusterSpec(
        name="h",
        kind="hdfs",
        version=hdfs.VERSION,
        roles={"namenode": ["localhost"], "datanode": ["localhost"]},
        site=site,
    )
    dep = deployment.Deployment(spec, {"localhost": {"name": "localhost"}}, opener=open_host)
    kind = hdfs.Hdfs(dep)
    try:
        dep.site = base.merge_site(kind.configure(), base.fill_id(spec.site, dep.ident))
        return dep, kind.fields()
    finally:
        dep.close()


def test_the_file_system_is_at_the_namenode_perfpost_chose():
    dep, fields = configured({})
    rpc = f"127.0.0.1:{dep.ports['nn.rpc']}"
    assert dep.site["hdfs-site"]["dfs.namenode.rpc-address"] == rpc
    assert fields == {"uri": f"hdfs://{rpc}", "fs": f"hdfs://{rpc}", "nn": rpc}


def test_the_file_system_follows_a_namenode_address_the_config_sets():
    # Before, fs.defaultFS (and a cell's {cluster.fs}) kept perfpost's own port: a client
    # got "Connection refused" from an address where no NameNode listened.
    dep, fields = configured({"hdfs-site": {"dfs.namenode.rpc-address": "127.0.0.1:9999"}})
    assert dep.site["core-site"]["fs.defaultFS"] == "hdfs://127.0.0.1:9999"
    assert fields == {
        "uri": "hdfs://127.0.0.1:9999",
        "fs": "hdfs://127.0.0.1:9999",
        "nn": "127.0.0.1:9999",
    }


def test_site_xml_escapes_what_xml_would_misread():
    # A value with markup characters (a JVM option, a regex) reads back as written, by the
    # standard library's XML parser as Hadoop's would read it.
    import xml.etree.ElementTree as ET

    props = {"a.key&<x>": "v <1> & \"q\" 's'", "plain": 3}
    root = ET.fromstring(base.site_xml(props))
    got = {p.findtext("name"): p.findtext("value") for p in root.iter("property")}
    assert got == {"a.key&<x>": "v <1> & \"q\" 's'", "plain": "3"}
