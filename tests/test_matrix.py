import pytest

from perfpost.errors import ConfigError
from perfpost.plan.matrix import cell_id, expand, parse_cell_id


def ids(cells):
    return [c.id for c in cells]


def test_cross_product_in_declaration_order_first_axis_slowest():
    cells = expand({"layout": ["FILE_PER_CHUNK", "FILE_PER_BLOCK"], "size": [1024, 10240]})
    assert ids(cells) == [
        "layout=FILE_PER_CHUNK,size=1024",
        "layout=FILE_PER_CHUNK,size=10240",
        "layout=FILE_PER_BLOCK,size=1024",
        "layout=FILE_PER_BLOCK,size=10240",
    ]
    assert cells[3].value_map == {"layout": "FILE_PER_BLOCK", "size": 10240}


def test_labelled_axis_names_cells_by_label_and_keeps_values_for_commands():
    cells = expand({"storage": {"disk": "/var/tmp/x", "memdisk": "/dev/shm/x"}})
    assert ids(cells) == ["storage=disk", "storage=memdisk"]
    assert cells[1].value_map == {"storage": "/dev/shm/x"}
    assert cells[1].label_map == {"storage": "memdisk"}


def test_exclude_drops_matching_combinations_only():
    cells = expand(
        {"readers": [1, 3, 6], "bs": ["4k", "1M"]},
        exclude=[{"readers": [3, 6], "bs": "4k"}],
    )
    assert ids(cells) == [
        "readers=1,bs=4k",
        "readers=1,bs=1M",
        "readers=3,bs=1M",
        "readers=6,bs=1M",
    ]


def test_zip_moves_axes_together_and_crosses_the_rest():
    cells = expand(
        {"size": ["1k", "1M"], "count": [100000, 100], "layout": ["A", "B"]},
        zip_groups=[["size", "count"]],
    )
    assert ids(cells) == [
        "size=1k,count=100000,layout=A",
        "size=1k,count=100000,layout=B",
        "size=1M,count=100,layout=A",
        "size=1M,count=100,layout=B",
    ]


def test_no_axes_is_one_cell():
    assert ids(expand({})) == ["default"]


def test_ids_round_trip():
    cells = expand({"a": [1, 2], "b": {"x": "/p"}})
    for c in cells:
        assert parse_cell_id(c.id) == c.label_map
        assert cell_id(tuple(c.label_map.items())) == c.id


@pytest.mark.parametrize(
    ("axes", "kw", "where", "fragment"),
    [
        ({"dir": ["/var/tmp"]}, {}, "axes.dir", "cannot name a cell"),
        ({"a": []}, {}, "axes.a", "no values"),
        ({"a": [1, 1]}, {}, "axes.a", "duplicate"),
        ({"a": [1, 2], "b": [1]}, {"zip_groups": [["a", "b"]]}, "zip[0]", "equal lengths"),
        ({"a": [1, 2]}, {"zip_groups": [["a", "c"]]}, "zip[0]", "'c' is not an axis"),
        ({"a": [1, 2]}, {"exclude": [{"a": 3}]}, "exclude[0].a", "'3' is not a value"),
        ({"a": [1, 2]}, {"exclude": [{"b": 1}]}, "exclude[0]", "'b' is not an axis"),
        ({"a": [1]}, {"exclude": [{"a": 1}]}, "exp.exclude", "drop every cell"),
        ({"a": [1]}, {"exclude": [{}]}, "exclude[0]", "empty exclude"),
    ],
)
def test_bad_matrices_are_refused_with_the_key_path(axes, kw, where, fragment):
    with pytest.raises(ConfigError) as e:
        expand(axes, where="exp.axes", **kw)
    assert where in e.value.where
    assert fragment in e.value.message
