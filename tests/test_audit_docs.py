"""docs/supported-ops/ is generated from the rules; a page that no longer matches them fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def load_script():
    spec = importlib.util.spec_from_file_location("gen_supported_ops", REPO / "scripts" / "gen_supported_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_supported_ops_pages_match_the_rules():
    stale = load_script().stale_pages()
    assert stale == [], f"stale pages in docs/supported-ops: {stale}; run `python scripts/gen_supported_ops.py`"


def test_stale_page_is_detected(tmp_path):
    script = load_script()
    from edgedeploy.pipeline.supported_ops import generate_pages

    pages = generate_pages()
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert script.stale_pages(tmp_path) == []
    (tmp_path / "espdl.md").write_text(pages["espdl.md"].replace("esp-dl 3.3.9", "esp-dl 3.3.8"), encoding="utf-8")
    (tmp_path / "gone.md").write_text("a page for a target that has no rules\n", encoding="utf-8")
    assert script.stale_pages(tmp_path) == ["espdl.md", "gone.md"]


def test_pages_cover_every_target_with_rules():
    from edgedeploy.pipeline.supported_ops import generate_pages
    from edgedeploy.pipeline.audit import has_rules
    from edgedeploy.targets import all_targets

    pages = generate_pages()
    for target in all_targets():
        assert (f"{target.id}.md" in pages) == has_rules(target)
        assert target.name in pages["README.md"]
    espdl = pages["espdl.md"]
    assert "| esp32s3 | ESP32-S3 | esp-dl 3.3.9 / esp-ppq 1.3.12 |" in espdl
    assert "| `resize_limits` | Resize | unsupported | all |" in espdl
    assert "| Conv | int8, int16 | int8, int16 |" in espdl
