#!/usr/bin/env python3
"""Write docs/supported-ops/<target>.md for every registered target that has rules.

    python scripts/gen_supported_ops.py          # (re)write the pages
    python scripts/gen_supported_ops.py --check  # exit 1 if a page is missing or stale (CI)

The pages come from edgedeploy.pipeline.supported_ops.generate_pages(), which iterates the target registry:
a target that adds targets/<vendor>/rules.py gets its page without changes here. Pages of
targets that no longer have rules are removed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "supported-ops"


def stale_pages(folder: Path = DOCS) -> list[str]:
    """Names of pages that are missing, differ from the rules, or should no longer exist."""
    from edgedeploy.pipeline.supported_ops import generate_pages

    pages = generate_pages()
    stale = [name for name, text in pages.items() if not (folder / name).exists() or (folder / name).read_text(encoding="utf-8") != text]
    if folder.exists():
        stale += [p.name for p in folder.glob("*.md") if p.name not in pages]
    return sorted(stale)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages; exit 1 if any")
    args = parser.parse_args(argv)
    from edgedeploy.pipeline.supported_ops import generate_pages

    if args.check:
        stale = stale_pages()
        for name in stale:
            print(f"stale: docs/supported-ops/{name} (run scripts/gen_supported_ops.py)", file=sys.stderr)
        return 1 if stale else 0
    pages = generate_pages()
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (DOCS / name).write_text(text, encoding="utf-8")
        print(f"wrote docs/supported-ops/{name}", file=sys.stderr)
    for old in DOCS.glob("*.md"):
        if old.name not in pages:
            old.unlink()
            print(f"removed docs/supported-ops/{old.name} (its target has no rules)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
