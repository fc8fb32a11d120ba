#!/usr/bin/env python3
"""The tokenizer benchmark's corpus: mixed text cut into documents of at least --doc-bytes bytes.

Three kinds of text, each from files a Debian machine with python3 already has:
  code          the running interpreter's standard library sources (*.py, sorted by path)
  prose         /usr/share/common-licenses, pydoc's topic texts, then the packages'
                /usr/share/doc/*/copyright files (sorted by path)
  multilingual  paragraphs drawn with a seeded RNG from tests/tokenizer/corpus.json's strings
                (CJK, Arabic, emoji, digits, contractions, whitespace runs, code fragments)
Each kind is filled up to its byte budget, cut into documents (each ends at the first line end
past --doc-bytes, always on a UTF-8 boundary), and the documents of all kinds are shuffled with
the same seed. Writes one JSON array of strings; prints the mix as one JSON line. Deterministic
for one machine's files and interpreter: the line carries the corpus's sha256 to compare runs.
  python3 bench/scripts/make-tokenizer-corpus.py OUT_JSON [--code-mb 5] [--prose-mb 3] ...
"""

import argparse
import ast
import hashlib
import json
import random
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS_STRINGS = ROOT / "tests" / "tokenizer" / "corpus.json"
MB = 1_000_000
# A document may run this far past --doc-bytes looking for a line end before it is cut anyway.
LINE_END_SLACK = 4096


def read_text(path):
    """A file's text, or None when it is not UTF-8 (left out rather than mangled)."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def fill(texts, budget):
    """Concatenates texts (separated by a blank line) until budget bytes are reached."""
    parts, size = [], 0
    for text in texts:
        if size >= budget:
            break
        if text:
            parts.append(text)
            size += len(text.encode("utf-8")) + 2
    return "\n\n".join(parts)


def code_texts():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.rglob("*.py")):
        if "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        yield read_text(path)


def pydoc_topics():
    """The English of pydoc's topic pages (the strings of pydoc_data/topics.py)."""
    path = Path(sysconfig.get_paths()["stdlib"]) / "pydoc_data" / "topics.py"
    text = read_text(path)
    if text is None:
        return
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 200:
            yield node.value


def prose_texts():
    licenses = Path("/usr/share/common-licenses")
    if licenses.is_dir():
        for path in sorted(p for p in licenses.iterdir() if p.is_file()):
            yield read_text(path)
    yield from pydoc_topics()
    for path in sorted(Path("/usr/share/doc").glob("*/copyright")):
        yield read_text(path)


def multilingual_texts(rng):
    """Paragraphs of 3 to 12 corpus strings, joined by spaces, line ends or whitespace runs."""
    entries = json.loads(CORPUS_STRINGS.read_text(encoding="utf-8"))
    strings = [e for e in entries if isinstance(e, str) and e]
    # The long repeats stay, shortened: a few long runs per document, not one 10 KB run.
    strings += [e["repeat"] * min(e["count"], 200) for e in entries if isinstance(e, dict)]
    joiners = [" ", " ", " ", "\n", "  ", "\t", "\n\n", "    ", " \u3000 ", "\r\n"]
    while True:
        words = [rng.choice(strings) for _ in range(rng.randint(3, 12))]
        out = words[0]
        for word in words[1:]:
            out += rng.choice(joiners) + word
        yield out


def cut(text, doc_bytes):
    """Documents of at least doc_bytes bytes, each ending at a line end where one is near."""
    data = text.encode("utf-8")
    docs, start = [], 0
    while len(data) - start >= 2 * doc_bytes:
        end = start + doc_bytes
        newline = data.find(b"\n", end, end + LINE_END_SLACK)
        if newline >= 0:
            end = newline + 1
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end += 1  # never inside a UTF-8 sequence
        docs.append(data[start:end].decode("utf-8"))
        start = end
    if start < len(data):
        docs.append(data[start:].decode("utf-8"))  # the remainder: between 1 and 2 documents
    return docs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the JSON array of documents to write")
    parser.add_argument("--code-mb", type=float, default=5.0)
    parser.add_argument("--prose-mb", type=float, default=3.5)
    parser.add_argument("--multilingual-mb", type=float, default=2.0)
    parser.add_argument("--doc-bytes", type=int, default=64 * 1024)
    parser.add_argument("--seed", type=int, default=52)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    kinds = {
        "code": fill(code_texts(), args.code_mb * MB),
        "prose": fill(prose_texts(), args.prose_mb * MB),
        "multilingual": fill(multilingual_texts(rng), args.multilingual_mb * MB),
    }
    docs, mix = [], {}
    for kind, text in kinds.items():
        pieces = cut(text, args.doc_bytes)
        docs += pieces
        mix[kind] = {"bytes": len(text.encode("utf-8")), "documents": len(pieces)}
    rng.shuffle(docs)

    body = json.dumps(docs, ensure_ascii=False).encode("utf-8")
    Path(args.out).write_bytes(body)
    sizes = [len(d.encode("utf-8")) for d in docs]
    summary = {
        "bytes": sum(sizes),
        "documents": len(docs),
        "min_doc_bytes": min(sizes),
        "max_doc_bytes": max(sizes),
        "mix": mix,
        "python": sys.version.split()[0],
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    print(json.dumps(summary))
    if summary["bytes"] < 10 * MB or summary["min_doc_bytes"] < args.doc_bytes:
        print("make-tokenizer-corpus: corpus under 10 MB or a document too short", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
