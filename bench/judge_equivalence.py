"""Every judgment of the judge over every corpus text, written out: two trees' outputs compared.

    python bench/judge_equivalence.py OUT.json                 # this tree's outputs
    python bench/judge_equivalence.py OUT.json --against REF.json   # ... and the differences from REF
    python bench/judge_equivalence.py OUT.json --corpus DIR          # the *.jsonl files of another folder

Not a test.  A change made for speed must change no judgment: this runs ``claim_in_text`` (uncached,
and through ``claim_in_result``), the anchored judgment's reference (``anchored=False``),
``normalise`` (both ways), the candidates the anchors give, and the form functions
(``credential_ask``, ``names_credential``, ``asks_to_paste``, ``names_destructive``,
``says_unknown_tool``) over every text of every corpus file (tests/judge/corpus/*.jsonl: the claims'
texts and the forms' messages, titles and field names) and over variants of each (upper case, a
negation before it, a question mark after it, a prefix of it, a name-like spelling, a wrapper of
the bench's kind), and writes every field of every answer.  Equal files: the same judgments.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any, Iterator

import orjson

from truecall.judge import (asks_to_paste, claim_in_result, credential_ask, names_credential, names_destructive,
                            normalise, says_unknown_tool)
from truecall.judge import _claims

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "judge" / "corpus"


def _fields(value: Any) -> Any:
    return None if value is None else dataclasses.asdict(value)


def _schema_texts(schema: Any) -> Iterator[str]:
    """Every string a form's schema holds (names, titles, descriptions, enum values)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield str(key)
            yield from _schema_texts(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _schema_texts(value)
    elif isinstance(schema, str):
        yield schema


def _variants(text: str) -> list[str]:
    """The text and texts made from it, each a new case for the judge's rules (negation, questions,
    case, the head's cut, camelCase, non-ASCII)."""
    half = text[: len(text) // 2]
    return [text, text.upper(), text.title(), "Not " + text, "No: " + text, text + "?", "¿" + text + "?",
            half, text + " " + text, text.replace(" ", "_"), text.replace(" ", ""), "\u200b" + text + " — ok",
            "> " + text, "Result:\n" + text, text + "\n\n- item", '"' + text + '" he said', text[:200] + " 000123"]


def _texts(corpus: Path) -> tuple[list[str], list[tuple[str, Any]]]:
    texts: list[str] = []
    forms: list[tuple[str, Any]] = []
    for path in sorted(corpus.glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            case = orjson.loads(line)
            if "text" in case:
                texts.append(case["text"])
            if "message" in case:
                forms.append((case["message"], case.get("schema")))
                texts.append(case["message"])
                texts.extend(_schema_texts(case.get("schema")))
    return list(dict.fromkeys(texts)), forms


def outputs(corpus: Path = CORPUS) -> dict[str, Any]:
    texts, forms = _texts(corpus)
    judge = _claims._claim_cached.__wrapped__
    out: dict[str, Any] = {"texts": [], "forms": []}
    for base in texts:
        for text in _variants(base):
            result = {"content": [{"type": "text", "text": text}], "isError": False}
            out["texts"].append({
                "text": text,
                "claim": _fields(judge(text)),
                "claim_in_result": _fields(claim_in_result(result)),
                "reference": _fields(_claims._judge(text, anchored=False)),
                "candidates": _claims._candidates(text),
                "normalise": normalise(text),
                "normalise_unsplit": normalise(text, split_names=False),
                "names_credential": names_credential(text),
                "names_credential_field": names_credential(text, field_name=True),
                "asks_to_paste": asks_to_paste(text),
                "names_destructive": names_destructive(text),
                "says_unknown_tool": says_unknown_tool(text),
            })
    for message, schema in forms:
        out["forms"].append({"message": message, "schema": schema, "ask": _fields(credential_ask(message, schema))})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--against", metavar="REF", help="a reference output to compare with")
    parser.add_argument("--corpus", metavar="DIR", type=Path, default=CORPUS, help="where the *.jsonl files are")
    args = parser.parse_args()
    found = outputs(args.corpus)
    Path(args.out).write_bytes(orjson.dumps(found, option=orjson.OPT_INDENT_2))
    print(f"{len(found['texts'])} texts, {len(found['forms'])} forms -> {args.out}")
    if args.against:
        reference = orjson.loads(Path(args.against).read_bytes())
        differences = 0
        for group in ("texts", "forms"):
            if len(reference[group]) != len(found[group]):
                print(f"{group}: {len(reference[group])} in the reference, {len(found[group])} here")
                differences += 1
            for want, got in zip(reference[group], found[group]):
                if want != got:
                    differences += 1
                    if differences <= 20:
                        print("DIFFERENT:", orjson.dumps({"want": want, "got": got}).decode())
        print(f"differences: {differences}")
        sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
