"""Plain records (dataclasses and the like) as JSON-ready dicts.

Most `to_dict` methods copy a record's attributes under their own names, in the order the report
schema lists them; `record_fields` is that copy, so each method states only what it renames or
converts.
"""

from __future__ import annotations


def record_fields(record: object, *names: str) -> dict:
    """{name: record.name} for each of `names`, in the order given (the order of the JSON keys)."""
    return {name: getattr(record, name) for name in names}
