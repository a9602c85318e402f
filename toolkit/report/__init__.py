"""Reports: the versioned JSON report of an artifact is the source of truth; the terminal view,
Markdown and one self-contained HTML page (inline SVG plots) are rendered from it.

- schema.py    the report's schema name and version check (docs/report-schema.md)
- artifact.py  reading an artifact's report, and folding new sections (measurements) into it
- combine.py   several artifacts (targets, devices) into one comparison, same-scope rules
- text.py, markdown.py, html.py, svg.py   the renderings
- diagnosis.py, diagnosis_pages.py   the accuracy diagnosis and build --recover's attempts (text;
  HTML and Markdown), for `edgedeploy diagnose`, `build`'s summary and the report
- snr_curve.py, snr_svg.py   a diagnosis's accumulated-SNR curve per output (text chart; inline SVG)
"""
