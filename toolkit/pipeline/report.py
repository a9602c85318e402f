"""`edgedeploy report`: the comparison of artifacts, with what each artifact's target adds.

The core's combine (edgedeploy.report.combine) knows no target; this layer asks the target that
built each artifact for its sections (Target.report_sections: data in the form of
edgedeploy.report.sections, which the core checks and renders) and hands them in. An artifact
whose target is not installed here, or is broken, is shown with the shared sections only; a
target whose report_sections raises is named in a note and stops nothing.
"""

from __future__ import annotations

from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.report.artifact import LoadedArtifact
from edgedeploy.report.combine import combine
from edgedeploy.report.sections import ReportSectionError


def target_sections(art: LoadedArtifact) -> list:
    """What the artifact's target adds to the comparison; [] when that target is not here."""
    from edgedeploy.targets import all_targets

    target_id = (art.report.get("target") or {}).get("target")
    target = next((t for t in all_targets() if t.id == target_id), None)
    if target is None:
        return []
    try:
        return target.report_sections(art.report, art.path)
    except Exception as exc:  # a plug-in's bug: the report goes on without its sections, saying so
        reraise_if_interrupted(exc)
        raise ReportSectionError(f"the {target.id} target's report_sections raised {type(exc).__name__}: {exc}") from exc


def combine_reports(artifacts: list[LoadedArtifact]) -> dict:
    """The comparison of several artifacts, each target's sections included."""
    return combine(artifacts, target_sections)
