"""Plain records (dataclasses and the like) as JSON-ready dicts.

Most `to_dict` methods copy a record's attributes under their own names, in the order the report
schema lists them; `record_fields` is that copy, so each method states only what it renames or
converts.
"""

from __future__ import annotations


def record_fields(record: object, *names: str, **renamed: str) -> dict:
    """{name: record.name} for each of `names`, then {key: record.attribute} for each key=attribute
    of `renamed`, in the order given (the order of the JSON keys)."""
    fields = {name: getattr(record, name) for name in names}
    fields.update((key, getattr(record, attribute)) for key, attribute in renamed.items())
    return fields
