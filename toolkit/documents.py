"""The base of the Python API's results: a dataclass that is a JSON document underneath.

Apart from edgedeploy.api so that the results the audit never makes (edgedeploy.api_results)
can be defined on first use without an import cycle.
"""

from __future__ import annotations

import json
from typing import Any


class Document:
    """A result that is a JSON document underneath.

    `document` is that document as the pipeline made it (read it, do not change it; it may hold
    tuples where the JSON has arrays): the CLI renders it without a copy, which matters for the
    audit's speed. `to_dict()` is a copy in JSON's own types, exactly what `--format json` writes.
    """

    document: dict

    def to_dict(self) -> dict:
        """The JSON document, a fresh copy in JSON's types: the shape of its `schema`'s shipped JSON Schema."""
        return json.loads(json.dumps(self.document, default=json_value))


def json_value(value: Any) -> Any:
    """What the CLI's JSON writer makes of a value JSON has no type for (numpy values, sets, paths)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return list(value)
    return str(value)
