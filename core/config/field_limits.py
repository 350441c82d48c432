"""One home for turning a pydantic field's numeric constraints into words ("an integer from 1 to 1024")."""

from __future__ import annotations

from pydantic.fields import FieldInfo


def bounds(info: FieldInfo) -> tuple[float | None, float | None, bool]:
    """(lower, upper, lower is strict) of a field's numeric constraints (None where there is none)."""
    lo = hi = None
    strict = False
    for meta in info.metadata:
        if getattr(meta, "ge", None) is not None:
            lo = meta.ge
        if getattr(meta, "gt", None) is not None:
            lo, strict = meta.gt, True
        if getattr(meta, "le", None) is not None:
            hi = meta.le
    return lo, hi, strict


def numeric_range(info: FieldInfo) -> str:
    """'an integer from 1 to 10', 'a number above 0 and up to 1', or '' when the field has no closed range."""
    lo, hi, strict = bounds(info)
    if lo is None or hi is None:
        return ""
    kind = "an integer" if info.annotation in (int, int | None) else "a number"
    return f"{kind} {'above' if strict else 'from'} {_num(lo)} {'and up ' if strict else ''}to {_num(hi)}"


def _num(value: float) -> str:
    """2.0 → '2', 1048576 → '1048576', 0.0001 → '0.0001' (never exponent notation for whole numbers)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.10g}"
