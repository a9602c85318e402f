"""`edgedeploy report`: the comparison of artifacts, with what each artifact's target adds.

The core's combine (edgedeploy.report.combine) knows no target; this layer asks the target that
built each artifact for its contribution (Target.report_contribution: memory rows, the
quantiser's worst layers) and hands it in. An artifact whose target is not installed here, or is
broken, is shown with the shared sections only.
"""

from __future__ import annotations

from edgedeploy.report.artifact import LoadedArtifact
from edgedeploy.report.combine import combine


def target_contribution(art: LoadedArtifact) -> dict:
    """What the artifact's target adds to the comparison; {} when that target is not here."""
    from edgedeploy.targets import all_targets

    target_id = (art.report.get("target") or {}).get("target")
    target = next((t for t in all_targets() if t.id == target_id), None)
    return target.report_contribution(art.report, art.path) if target is not None else {}


def combine_reports(artifacts: list[LoadedArtifact]) -> dict:
    """The comparison of several artifacts, each target's sections included."""
    return combine(artifacts, target_contribution)
