"""The one packer and token estimate behind `query`, `recall` and `context` (nexusd.retrieve.pack)."""

from __future__ import annotations

from nexusd.retrieve import pack


def text_cost(item: tuple[str, str]) -> int:
    return pack.estimate(item[1])


def test_the_estimate_is_characters_over_four_rounded_up() -> None:
    assert [pack.estimate(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    assert pack.estimate_json({"a": 1}) == pack.estimate('{"a":1}') == 2


def test_items_that_do_not_fit_are_skipped_and_counted_and_smaller_ones_still_go_in() -> None:
    items = [("a", "x" * 40), ("b", "x" * 400), ("c", "x" * 40)]
    got = pack.pack(items, 25, cost=text_cost)
    assert [i[0] for i in got.items] == ["a", "c"]
    assert got.used == 20 and got.tokens == [10, 10]
    assert got.cut["budget"] == 1 and got.cut["budgetTokens"] == 100


def test_a_page_stops_at_the_first_item_that_does_not_fit() -> None:
    items = [("a", "x" * 40), ("b", "x" * 400), ("c", "x" * 40)]
    got = pack.pack(items, 25, cost=text_cost, stop=True)
    assert [i[0] for i in got.items] == ["a"] and got.end == 1  # the cursor resumes at "b"
    assert pack.pack(items[:1], 25, cost=text_cost, stop=True).end == 1


def test_the_first_item_is_never_cut_for_room() -> None:
    big = [("a", "x" * 4000)]
    whole = pack.pack(big, 10, cost=text_cost)
    assert whole.items == big and whole.used == 1000  # no way to shorten: taken whole
    shortened = pack.pack(big, 10, cost=text_cost, shorten=lambda i, room: (i[0], pack.shorten_text(i[1], room)))
    assert shortened.used <= 10 and shortened.items[0][1].endswith("...") and shortened.cut["shortened"] == 1
    tiny = pack.pack(big, 5, cost=text_cost, shorten=lambda i, room: (i[0], pack.shorten_text(i[1], room)))
    assert tiny.items == [] and tiny.cut["budget"] == 1  # too little room to be worth shortening


def test_parent_cap_and_limit() -> None:
    items = [("p1", "x"), ("p1", "y"), ("p1", "z"), ("p2", "w"), ("p3", "v")]
    got = pack.pack(items, 100, cost=text_cost, limit=3, parent=lambda i: i[0], per_parent=2)
    assert got.items == [("p1", "x"), ("p1", "y"), ("p2", "w")]
    assert got.cut["parentCap"] == 1 and got.cut["limit"] == 1
