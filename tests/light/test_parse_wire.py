"""What a parser worker sends back decodes to exactly what it extracted, for every language's fixtures."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.languages import parsed_language
from nexusd.sync.parsepool import ParseOutcome, ParseTask, decode_outcome, encode_outcome, process_one

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nav"


def test_every_fixture_round_trips() -> None:
    seen: set[str] = set()
    count = 0
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or parsed_language(path.name) is None:
            continue
        rel = str(path.relative_to(FIXTURES))
        outcome = process_one(str(FIXTURES), ParseTask(rel), 2_000_000)
        assert outcome.status == "parsed", (rel, outcome.reason)
        data = encode_outcome(outcome)
        assert data[:1] != b"P", f"{rel} fell back to pickle"
        assert decode_outcome(data) == outcome, rel
        assert outcome.facts is not None
        seen.add(outcome.facts.language)
        count += 1
    assert count >= 20
    assert {"python", "typescript", "go", "rust", "java", "c", "cpp", "csharp", "ruby"} <= seen, seen


def test_imports_keep_their_pairs_and_other_outcomes_round_trip(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from os.path import join as j, split\n\n\ndef f():\n    return j('a', 'b')\n")
    outcome = process_one(str(tmp_path), ParseTask("m.py"), 2_000_000)
    back = decode_outcome(encode_outcome(outcome))
    assert back == outcome
    assert back.facts is not None
    assert all(isinstance(pair, tuple) for imp in back.facts.imports for pair in imp.names)
    assert ("join", "j") in back.facts.imports[0].names
    for other in (ParseOutcome("a.py", "unchanged", hash="h"), ParseOutcome("b.bin", "skipped", reason="binary")):
        assert decode_outcome(encode_outcome(other)) == other


def test_text_msgpack_cannot_carry_falls_back(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    outcome = process_one(str(tmp_path), ParseTask("m.py"), 2_000_000)
    assert outcome.facts is not None
    outcome.facts.symbols[0].doc = "bad \udcff byte"  # a lone surrogate, as undecodable bytes become
    data = encode_outcome(outcome)
    assert data[:1] == b"P"
    assert decode_outcome(data) == outcome
