"""Explicit Arrow schemas derived from the pydantic row models.

The pydantic models are the single source of truth; this module maps their field
annotations to Arrow types so Parquet files never rely on type inference.
"""

from __future__ import annotations

import types
import typing
from datetime import datetime
from functools import cache

import pyarrow as pa
from pydantic import BaseModel

_SCALARS: dict[object, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def _unwrap_optional(annotation: object) -> tuple[object, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unions other than Optional are not storable: {annotation}")
        return args[0], True
    return annotation, False


def arrow_type(annotation: object) -> pa.DataType:
    """The Arrow type for one (non-optional) annotation."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return pa.string()
    if origin is list:
        (item,) = typing.get_args(annotation)
        item, nullable = _unwrap_optional(item)
        return pa.list_(pa.field("item", arrow_type(item), nullable=nullable))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct(list(_fields(annotation)))
    raise TypeError(f"no Arrow mapping for {annotation!r}; store it as a JSON string")


def _fields(model: type[BaseModel]) -> typing.Iterator[pa.Field]:
    hints = typing.get_type_hints(model)
    for name in model.model_fields:
        inner, nullable = _unwrap_optional(hints[name])
        yield pa.field(name, arrow_type(inner), nullable=nullable)


@cache
def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The explicit Arrow schema of a row model (cached per model)."""
    return pa.schema(list(_fields(model)))
