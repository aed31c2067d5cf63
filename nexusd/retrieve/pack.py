"""One packer and one token estimate for every op that returns ranked items in a token budget: `query`
(history and memory), `recall` (memory) and `context` (the graph around a symbol).

    estimate    tokens ~= ceil(characters / CHARS_PER_TOKEN) of what is shown (at least 1 for anything
                shown): a rule of thumb for English and code under BPE tokenizers. `query` and `recall`
                show text, so they count the text; `context` returns structured items, so it counts their
                compact JSON (`estimate_json`), with the same estimate.
    pack        items are taken in rank order. An item is cut when its parent already has `per_parent`
                items (`cut.parentCap`), when `limit` items are already taken (`cut.limit`), or when it does
                not fit the budget left (`cut.budget`, its tokens in `cut.budgetTokens`). The first item is
                never cut for room: with `shorten` it is shortened to the room there is (`cut.shortened`),
                else it is taken whole, so an answer is never empty for want of budget. With `stop=True`
                (ordered pages, whose cursor resumes where the page ends) the first item that does not fit
                ends the page instead of being skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

CHARS_PER_TOKEN = 4
TOKEN_NOTE = f"tokens ~= characters / {CHARS_PER_TOKEN} of what is shown"
MIN_SHORTENED = 8  # fewer tokens of room than this: the first item is not worth shortening

T = TypeVar("T")


def estimate(text: str) -> int:
    """The token estimate of shown text."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN)) if text else 0


def estimate_json(value: Any) -> int:
    """The token estimate of a structured item as it goes on the wire (compact JSON)."""
    return estimate(json.dumps(value, separators=(",", ":"), default=str))


def shorten_text(text: str, tokens: int) -> str:
    """`text` cut to fit `tokens`, marked with an ellipsis."""
    room = tokens * CHARS_PER_TOKEN
    return text if len(text) <= room else text[: max(0, room - 3)] + "..."


@dataclass
class Packed(Generic[T]):
    items: list[T] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # each taken item's estimate
    used: int = 0
    cut: dict[str, int] = field(
        default_factory=lambda: {"parentCap": 0, "limit": 0, "budget": 0, "budgetTokens": 0, "shortened": 0}
    )
    end: int = 0  # index after the last item looked at (where an ordered page resumes)


def pack(
    items: Sequence[T],
    budget: int,
    *,
    cost: Callable[[T], int],
    limit: int | None = None,
    parent: Callable[[T], str] | None = None,
    per_parent: int = 0,
    shorten: Callable[[T, int], T] | None = None,
    stop: bool = False,
) -> Packed[T]:
    """Ranked `items` packed into `budget` tokens; see the module docstring for what is cut and why."""
    out: Packed[T] = Packed()
    taken: dict[str, int] = {}
    for index, item in enumerate(items):
        out.end = index
        if parent is not None and per_parent and taken.get(parent(item), 0) >= per_parent:
            out.cut["parentCap"] += 1
            continue
        if limit is not None and len(out.items) >= limit:
            if stop:
                break
            out.cut["limit"] += 1
            continue
        tokens = cost(item)
        if out.used + tokens > budget:
            room = budget - out.used
            if out.items:
                if stop:
                    break
                out.cut["budget"] += 1
                out.cut["budgetTokens"] += tokens
                continue
            if shorten is not None and room >= MIN_SHORTENED:
                item = shorten(item, room)
                out.cut["shortened"] += 1
                tokens = cost(item)
            elif shorten is not None:
                out.cut["budget"] += 1
                out.cut["budgetTokens"] += tokens
                continue
        if parent is not None:
            taken[parent(item)] = taken.get(parent(item), 0) + 1
        out.items.append(item)
        out.tokens.append(tokens)
        out.used += tokens
    else:
        out.end = len(items)
    return out
