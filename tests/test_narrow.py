"""Wide tables split to fit a blog's column (what a browser shows is measured in Chromium in
test_post_e2e.py; here, what the markdown becomes, with widths counted by hand)."""

from __future__ import annotations

from perfpost.analysis import narrow

# Every header and cell below is one word of 9 characters: 9 * 9.6 + 26 = 112.4 px a
# column, so six columns (674.4 px) fit 680 px and seven (786.8 px) do not.
HEAD = ["comparing", "groupname", "metricone", "changeval", "intervals", "verdictis", "pvalueadj"]
ROWS = [
    ["memvsdisk", "blocks4kb", "rateofops", "plus10pct", "p5top15pc", "better123", "p00000001"],
    ["memvsdisk", "blocks1mb", "rateofops", "plus01pct", "m2top4pct", "unclear12", "p00000004"],
]


def _table(head, rows, align=None):
    align = align or ["---"] * len(head)
    return "\n".join("| " + " | ".join(r) + " |" for r in [head, align, *rows]) + "\n"


WIDE = "Before.\n\n" + _table(HEAD, ROWS, [*["---"] * 3, "---:", *["---"] * 3]) + "\nAfter.\n"


def tables(markdown: str) -> list[list[str]]:
    out, current = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            out.append(current)
            current = []
    return out


def test_a_table_that_fits_is_left_as_it_was():
    six = _table(HEAD[:6], [r[:6] for r in ROWS])
    assert narrow.fit(six) == six  # not a character changed
    assert narrow.fit(WIDE, width=800) == WIDE


def test_a_wide_table_continues_with_its_key_columns():
    out = narrow.fit(WIDE)
    first, second = tables(out)
    # The fewest leading columns that tell the rows apart: the first two (the first alone
    # is the same in both rows). Six columns fit, seven do not.
    assert first[0] == "| " + " | ".join(HEAD[:6]) + " |"
    assert first[1] == "| --- | --- | --- | ---: | --- | --- |"  # alignment kept
    assert second[0] == "| comparing | groupname | pvalueadj |"
    assert second[2] == "| memvsdisk | blocks4kb | p00000001 |"
    assert "*The same rows, continued: pvalueadj.*" in out
    assert out.startswith("Before.\n\n")
    assert out.endswith("After.\n")


def test_keys_wider_than_half_the_column_number_the_rows_instead():
    # A key of 40 characters (410 px, over 0.45 of 680) and five columns of 9 (112.4 px):
    # '#' (2 rows: 35.6 px) + the key + two columns = 670.4 px; the other three follow
    # numbered: 35.6 + 3 * 112.4 = 372.8 px.
    key = ["k" * 39 + str(i) for i in range(2)]
    head = ["testnamee", *HEAD[2:7]]
    rows = [[k, *r[2:7]] for k, r in zip(key, ROWS, strict=True)]
    out = narrow.fit(_table(head, rows))
    first, second = tables(out)
    assert first[0] == "| # | testnamee | metricone | changeval |"
    assert first[1] == "| ---: | --- | --- | --- |"
    assert second[0] == "| # | intervals | verdictis | pvalueadj |"
    assert [r.split("|")[1].strip() for r in second[2:]] == ["1", "2"]
    assert "*The same rows (by #), continued: intervals, verdictis, pvalueadj.*" in out


def test_code_and_unsplittable_tables_are_left_alone():
    fenced = "```\n" + WIDE + "```\n"
    assert narrow.fit(fenced) == fenced
    path = "/var/tmp/perfpost/" + "d" * 70  # one word wider than the column beside any key
    text = WIDE.replace("p00000001", path)
    assert narrow.fit(text) == text


def test_cells_with_pipes_in_code_stay_whole():
    assert narrow._cells("| `a|b` | c \\| d | e |") == ["`a|b`", "c \\| d", "e"]
