"""Reports: the versioned JSON report of an artifact is the source of truth; the terminal view,
Markdown and one self-contained HTML page (inline SVG plots) are rendered from it.

- schema.py    the report's schema name and version check (docs/report-schema.md)
- artifact.py  reading an artifact's report, and folding new sections (measurements) into it
- combine.py   several artifacts (targets, devices) into one comparison, same-scope rules
- text.py, markdown.py, html.py, svg.py   the renderings
"""
