"""Execution-time samplers for the ``sql`` ecosystem.

Every sampler reads the current probe output (``content`` is the parsed probe dict: the
``sql`` tools sample without ``of``), a seeded ``random.Random``, and the already-resolved
arguments it asked for with ``sample.with`` (table and column names, by keyword).  It
returns a literal that exists in the real database and makes the tool's result
non-trivial (some rows, never all), or raises ``LookupError`` when there is none.

Identifiers returned (tables, columns) always match ``[a-z_][a-z0-9_]*``, so commands may
embed them unquoted in SQL; values are embedded with the ``sql`` filter.  Values are the
probe's text rendering of what is stored (``"12.5"``, ``"Denver"``).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable
from datetime import date

from faker import Faker

IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
SEPARATOR = " | "
"""Separates the values of ``insert_values`` (the tool's command splits on it)."""
BASE_TABLES = ("customers", "products", "orders", "order_items")
KEY_PRIORITY = ("item_id", "shipment_id", "order_id", "product_id", "customer_id", "supplier_id")
"""Row keys of the shop's entities, most specific first (an item belongs to an order...)."""


# ---- reading the probe ------------------------------------------------------------------

def _rows(probe: dict, table: str) -> list[dict]:
    rows = probe.get("tables", {}).get(table)
    if not rows:
        raise LookupError(f"table {table!r} has no rows")
    return rows


def _columns(probe: dict, table: str) -> list[str]:
    entry = probe.get("schema", {}).get(table)
    if not entry:
        raise LookupError(f"no table or view {table!r}")
    return [c for c in entry["columns"] if IDENT.match(c)]


def _number(value: str | None) -> float | None:
    """The value as a finite number, or None ("nan", "Infinity" and names are not numbers)."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _is_int(value: str) -> bool:
    return re.fullmatch(r"-?\d+", value) is not None


def _is_id(column: str) -> bool:
    return column == "id" or column.endswith("_id")


def _numeric_columns(rows: list[dict], columns: list[str]) -> list[str]:
    out = []
    for c in columns:
        values = [_number(r.get(c)) for r in rows]
        if _is_id(c) or any(v is None for v in values):
            continue
        if len(set(values)) >= 2 and any(values):
            out.append(c)
    return out


def _categorical_columns(rows: list[dict], columns: list[str]) -> list[str]:
    """Columns an equality filter splits into a real subset, best tier first: text columns
    with a few repeating values; else any text column with two or more distinct values;
    else (small or all-numeric tables) numeric or id columns with repeating values."""
    repeating, varied, numeric = [], [], []
    for c in columns:
        values = [r.get(c) for r in rows]
        counts = Counter(values)
        if None in counts or len(counts) < 2:
            continue
        if all(_number(v) is not None for v in values):
            if max(counts.values()) >= 2:
                numeric.append(c)
            continue
        varied.append(c)
        if len(counts) <= max(2, len(rows) // 2) and max(counts.values()) >= 2:
            repeating.append(c)
    return repeating or varied or numeric


def _primary_key(table: str, rows: list[dict], columns: list[str]) -> str | None:
    """The integer id column naming the table's own rows (``customer_id`` of customers).

    Among the ``*_id`` columns holding distinct integers: one named after the table, else
    the most specific known key (an order's id before its customer's), else the first."""
    distinct = [c for c in columns if _is_id(c) and all(_is_int(r.get(c) or "") for r in rows)
                and len({r[c] for r in rows}) == len(rows)]
    own = [c for c in distinct if c.removesuffix("_id") in table]
    known = [c for c in KEY_PRIORITY if c in distinct]
    return (own or known or distinct or [None])[0]


def _choose(rng: random.Random, options: list[str], what: str) -> str:
    if not options:
        raise LookupError(f"no {what}")
    return rng.choice(sorted(options))


# ---- tables and columns -----------------------------------------------------------------

def _base_tables(content: dict) -> list[str]:
    schema = content.get("schema", {})
    return [t for t in BASE_TABLES
            if schema.get(t, {}).get("type") == "table" and len(content["tables"][t]) >= 3]


def base_table(content: dict, rng: random.Random, **_: str) -> str:
    """One of the shop's own tables (not a view, not one a step created), with rows."""
    return _choose(rng, _base_tables(content), "base table with rows")


def db_table(content: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """One of the shop's own tables, to name the database ``value`` by (a describer
    resolves it back to the file)."""
    return _choose(rng, _base_tables(content), f"table of {value or 'the database'}")


def filter_table(content: dict, rng: random.Random, **_: str) -> str:
    """A base table with a text column to filter on and a numeric column to aggregate."""
    tables = [t for t in _base_tables(content)
              if _categorical_columns(content["tables"][t], _columns(content, t))
              and _numeric_columns(content["tables"][t], _columns(content, t))]
    return _choose(rng, tables, "base table with text and numeric columns")


def filter_column(content: dict, rng: random.Random, table: str = "", column: str = "",
                  **_: str) -> str:
    """A text column of ``table`` with repeating values (never ``column``, if given)."""
    rows = _rows(content, table)
    cols = [c for c in _categorical_columns(rows, _columns(content, table)) if c != column]
    return _choose(rng, cols, f"categorical column in {table!r}")


def filter_value(content: dict, rng: random.Random, table: str = "", column: str = "",
                 where_column: str = "", among: tuple[str, ...] = (), **_: str) -> str:
    """A stored value of the column (one of ``among`` when given) that matches some rows of
    ``table`` but not all: three or more when such a value exists (so later steps still
    have rows to work on)."""
    column = where_column or column
    rows = _rows(content, table)
    counts = Counter(r.get(column) for r in rows)
    fit = [v for v, n in counts.items() if v is not None and n < len(rows)
           and (not among or v in among)]
    good = ([v for v in fit if counts[v] >= 3] or [v for v in fit if counts[v] >= 2] or fit)
    return _choose(rng, good, f"selective value in {table}.{column}")


def numeric_column(content: dict, rng: random.Random, table: str = "", where_column: str = "",
                   where_value: str = "", **_: str) -> str:
    """A numeric, non-id column of ``table`` with at least two distinct values (over the
    rows whose ``where_column`` is ``where_value``, when given, and not all zero there)."""
    rows = _rows(content, table)
    if where_column:
        rows = [r for r in rows if r.get(where_column) == where_value]
    cols = [c for c in _numeric_columns(rows, _columns(content, table)) if c != where_column]
    if where_column and not cols:  # one matching row: any non-zero numeric column will do
        cols = [c for c in _columns(content, table) if not _is_id(c) and c != where_column
                and all(_number(r.get(c)) for r in rows)]
    return _choose(rng, cols, f"numeric column in {table!r}")


def row_key(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """A column whose values are distinct integers (the table's id): it breaks ties."""
    rows = _rows(content, table)
    cols = _columns(content, table)
    key = _primary_key(table, rows, cols)
    if key is None:
        raise LookupError(f"{table!r} has no id column with distinct integers")
    return key


def top_count(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """How many of the top rows to keep: 2..10, and fewer than all rows."""
    rows = _rows(content, table)
    if len(rows) < 3:
        raise LookupError(f"{table!r} has fewer than three rows")
    return str(rng.randint(2, min(10, len(rows) - 1)))


def label_column(content: dict, rng: random.Random, table: str = "", column: str = "",
                 **_: str) -> str:
    """A column that names a row: text with two or more distinct values, or an id."""
    rows = _rows(content, table)
    cols = [c for c in _columns(content, table) if c != column and None not in
            {r.get(c) for r in rows} and (_is_id(c) or (
                len({r[c] for r in rows}) >= 2 and any(_number(r[c]) is None for r in rows)))]
    return _choose(rng, cols, f"label column in {table!r}")


def threshold(content: dict, rng: random.Random, table: str = "", column: str = "",
              **_: str) -> str:
    """A stored value of ``column`` near the middle: ``> value`` keeps some rows, not all."""
    rows = _rows(content, table)
    values = sorted({_number(r.get(column)) for r in rows} - {None})
    if len(values) < 2:
        raise LookupError(f"{table}.{column} has fewer than two distinct numbers")
    below_max = values[:-1]
    lo, hi = len(below_max) // 4, max(len(below_max) // 4 + 1, (3 * len(below_max)) // 4)
    value = rng.choice(below_max[lo:hi])
    return str(int(value)) if value == int(value) else repr(value)


def index_column(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """A column of ``table`` that is neither its primary key nor already indexed."""
    rows = _rows(content, table)
    cols = _columns(content, table)
    pk = _primary_key(table, rows, cols)
    indexed = {ix["columns"][0] for ix in content.get("indexes", {}).values()
               if ix.get("table") == table and ix.get("columns")}
    return _choose(rng, [c for c in cols if c != pk and c not in indexed],
                   f"unindexed column in {table!r}")


def join_columns(content: dict, rng: random.Random, left: str = "", right: str = "",
                 **_: str) -> str:
    """The columns ``left`` and ``right`` share (comma-separated), when some rows match."""
    shared = sorted(set(_columns(content, left)) & set(_columns(content, right)))
    if not shared:
        raise LookupError(f"{left!r} and {right!r} share no column")

    def keys(table: str) -> set[tuple]:
        return {tuple(r.get(c) for c in shared) for r in _rows(content, table)}

    if not keys(left) & keys(right):
        raise LookupError(f"no row of {left!r} matches a row of {right!r} on {shared}")
    return ",".join(shared)


def city(content: dict, rng: random.Random, **_: str) -> str:
    """A customer city whose customers placed some of the orders (three or more when such a
    city exists), but not all of them."""
    where = {r["customer_id"]: r["city"] for r in _rows(content, "customers")}
    orders = _rows(content, "orders")
    counts = Counter(where.get(o["customer_id"]) for o in orders)
    fit = [c for c, n in counts.items() if c and n < len(orders)]
    return _choose(rng, [c for c in fit if counts[c] >= 3] or fit, "city with orders")


# ---- updates ----------------------------------------------------------------------------

def set_column(content: dict, rng: random.Random, table: str = "", where_column: str = "",
               **_: str) -> str:
    """A column to update: categorical or numeric, not an id, not the filter column."""
    rows = _rows(content, table)
    cols = _columns(content, table)
    options = set(_categorical_columns(rows, cols) + _numeric_columns(rows, cols))
    return _choose(rng, [c for c in options if c != where_column and not _is_id(c)],
                   f"column to set in {table!r}")


def _new_number(rng: random.Random, values: list[float], as_int: bool) -> str:
    lo, hi = min(values), max(values)
    if as_int:
        return str(rng.randint(int(lo), max(int(hi), int(lo) + 10)))
    return repr(round(rng.uniform(max(lo, 0.5), max(hi, lo + 5)), 2))


def set_value(content: dict, rng: random.Random, table: str = "", column: str = "",
              where_column: str = "", where_value: str = "", **_: str) -> str:
    """A new value for ``column`` that really changes at least one matching row."""
    rows = _rows(content, table)
    current = {r.get(column) for r in rows if r.get(where_column) == where_value}
    present = [r.get(column) for r in rows if r.get(column) is not None]
    if all(_number(v) is not None for v in present):
        numbers = [float(v) for v in present]
        for _ in range(20):
            value = _new_number(rng, numbers, all(_is_int(v) for v in present))
            if value not in current:
                return value
        raise LookupError(f"no new number for {table}.{column}")
    options = [v for v in set(present) if current - {v}]
    return _choose(rng, options, f"new value for {table}.{column}")


# ---- inserts ----------------------------------------------------------------------------

def insert_columns(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """Every column of ``table``, comma-separated (sorted, so the order is explicit)."""
    cols = _columns(content, table)
    if len(cols) != len(content["schema"][table]["columns"]):
        raise LookupError(f"{table!r} has columns that are not plain identifiers")
    return ",".join(cols)


def _fresh_text(fake: Faker, column: str, donor: str, taken: set[str]) -> str:
    for _ in range(50):
        if column.endswith("date"):
            value = fake.date_between_dates(date(2025, 1, 1), date(2025, 12, 31)).isoformat()
        else:  # a product-like name: a new first word on a donor's noun
            value = f"{fake.safe_color_name().title()} {donor.split(' ', 1)[-1]}"
        if value not in taken and SEPARATOR.strip() not in value:
            return value
    raise LookupError(f"no fresh value for column {column!r}")


def _person(fake: Faker) -> dict[str, str]:
    first, last = fake.first_name(), fake.last_name()
    email = f"{first}.{last}{fake.random_int(1, 99)}@{fake.free_email_domain()}".lower()
    return {"first_name": first, "last_name": last, "email": email}


def insert_values(content: dict, rng: random.Random, table: str = "", columns: str = "",
                  **_: str) -> str:
    """Values for a new row, in ``columns`` order, joined by `` | ``.

    The table's id column gets max + 1; other ids and repeating values are copied from one
    existing row (so a customer's city and state agree); a person's names and email, and
    other text that is unique per row, are new from Faker.
    """
    rows = _rows(content, table)
    cols = columns.split(",")
    fake = Faker("en_US")
    fake.seed_instance(rng.randrange(2**31))
    donor = rng.choice(rows)
    pk = _primary_key(table, rows, cols)
    emails = {r.get("email") for r in rows}
    person = _person(fake)
    while person["email"] in emails:
        person = _person(fake)
    values = []
    for c in cols:
        existing = [r.get(c) for r in rows]
        if c == pk:
            value = str(max(int(v) for v in existing) + 1)
        elif c in person:
            value = person[c]
        elif _is_id(c) or _number(donor[c]) is not None or len(set(existing)) < len(existing):
            value = donor[c]
        else:
            value = _fresh_text(fake, c, donor[c], set(existing))
        if value is None or SEPARATOR.strip() in value:
            raise LookupError(f"cannot write a value for {table}.{c}")
        values.append(value)
    return SEPARATOR.join(values)


SALE_STATUSES = ("paid", "shipped", "delivered")
"""Statuses of orders that count as money spent: the best customer by the orders they
cancelled or got refunded would contradict every purpose such a lookup serves."""


def order_status(content: dict, rng: random.Random, **_: str) -> str:
    """A status of a sale (:data:`SALE_STATUSES`) some orders have (three or more when
    possible), but not all."""
    return filter_value(content, rng, table="orders", column="status", among=SALE_STATUSES)


# ---- ids: other seeded ones (the open-loop guess for a looked-up customer, order, product)

def customer_with_orders(content: dict, rng: random.Random, **_: str) -> str:
    """The customer_id of a customer who placed at least one order."""
    ids = sorted({str(o["customer_id"]) for o in _rows(content, "orders")}, key=int)
    return _choose(rng, ids, "customer with orders")


def placed_order(content: dict, rng: random.Random, **_: str) -> str:
    """The order_id of an order (the open-loop guess for a looked-up order)."""
    ids = sorted({str(o["order_id"]) for o in _rows(content, "orders")}, key=int)
    return _choose(rng, ids, "order")


def sold_product(content: dict, rng: random.Random, **_: str) -> str:
    """The product_id of a product some order line sold (the open-loop guess for a
    looked-up product)."""
    ids = sorted({str(i["product_id"]) for i in _rows(content, "order_items")}, key=int)
    return _choose(rng, ids, "product with order lines")



# ---- faults: where a planted defect shows (a repair tool's table and column) ------------

def _one(found: set[str], what: str) -> str:
    if len(found) != 1:
        raise LookupError(f"{len(found)} {what}; a repair needs exactly one")
    return found.pop()


def _defects(content: dict, table: str, broken: Callable[[str], bool]) -> set[str]:
    """The non-id columns of ``table`` with a value for which ``broken`` holds."""
    rows = content.get("tables", {}).get(table) or []
    return {c for r in rows for c, v in r.items()
            if IDENT.match(c) and not _is_id(c) and v is not None and broken(v)}


def _negative(value: str) -> bool:
    number = _number(value)
    return number is not None and number < 0


def _padded(value: str) -> bool:
    return _number(value) is None and value != value.strip()


def negative_table(content: dict, rng: random.Random, **_: str) -> str:
    """The one table with a negative amount."""
    return _one({t for t in _base_tables(content) if _defects(content, t, _negative)},
                "tables with negative amounts")


def negative_column(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """The one column of ``table`` holding a negative amount."""
    return _one(_defects(content, table, _negative), f"columns of {table} with negatives")


def padded_table(content: dict, rng: random.Random, **_: str) -> str:
    """The one table with text that has leading or trailing spaces."""
    return _one({t for t in _base_tables(content) if _defects(content, t, _padded)},
                "tables with padded text")


def padded_column(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """The one column of ``table`` with text that has leading or trailing spaces."""
    return _one(_defects(content, table, _padded), f"columns of {table} with padded text")


def _repeated(rows: list[dict], key: str) -> list[dict]:
    """The rows that repeat an earlier row in every column but the row's own id ``key``."""
    seen: set[str] = set()
    out = []
    for r in sorted(rows, key=lambda r: int(r[key])):
        body = repr(sorted((c, v) for c, v in r.items() if c != key))
        if body in seen:
            out.append(r)
        seen.add(body)
    return out


def duplicated_table(content: dict, rng: random.Random, **_: str) -> str:
    """The one table holding a row entered twice (equal but for its own id)."""
    found = set()
    for t in _base_tables(content):
        rows = content["tables"][t]
        key = _primary_key(t, rows, _columns(content, t))
        if key and _repeated(rows, key):
            found.add(t)
    return _one(found, "tables with rows entered twice")


def duplicate_key(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """The column that tells ``table``'s entries apart (an e-mail address, else its most
    distinct text column): the repeated rows share it, no two other rows do.  A date is
    never one, even where no two rows share it: two sign-ups on one day are two people."""
    rows = _rows(content, table)
    key = _primary_key(table, rows, _columns(content, table))
    repeated = {id(r) for r in _repeated(rows, key or "")}
    kept = [r for r in rows if id(r) not in repeated]
    unique = [c for c in _columns(content, table) if not _is_id(c)
              and not c.endswith("date") and all(_number(r[c]) is None for r in rows)
              and len({r[c] for r in kept}) == len(kept)]
    best = [max(unique, key=lambda c: (all("@" in str(r[c]) for r in rows),
                                       len({r[c] for r in rows}), c))] if unique else []
    return _choose(rng, best, f"column that tells the rows of {table} apart")


def orphan_table(content: dict, rng: random.Random, **_: str) -> str:
    """The one table with rows that point at a missing row of another table."""
    return _one({t for t in _base_tables(content) if _orphan_columns(content, t)},
                "tables with dangling references")


def _orphan_columns(content: dict, table: str) -> set[str]:
    """Columns ``<thing>_id`` of ``table`` with a value no row of ``<thing>s`` has."""
    tables = content.get("tables", {})
    found = set()
    for c in _columns(content, table):
        parent = c.removesuffix("_id") + "s"
        if not c.endswith("_id") or parent == table or not tables.get(parent):
            continue
        have = {r.get(c) for r in tables[parent]}
        if any(r.get(c) not in have for r in tables[table]):
            found.add(c)
    return found


def orphan_column(content: dict, rng: random.Random, table: str = "", **_: str) -> str:
    """The one column of ``table`` whose references point at missing rows."""
    return _one(_orphan_columns(content, table), f"columns of {table} with dangling references")


def total_table(content: dict, rng: random.Random, **_: str) -> str:
    """``orders`` when an order's total differs from its lines plus shipping."""
    tables = content.get("tables", {})
    lines: dict[str, float] = {}
    for item in tables.get("order_items") or []:
        lines[item["order_id"]] = lines.get(item["order_id"], 0.0) + float(item["line_total"])
    wrong = [o for o in tables.get("orders") or []
             if abs(float(o["total"]) - float(o["shipping_cost"])
                    - lines.get(o["order_id"], 0.0)) >= 0.005]
    if not wrong:
        raise LookupError("every order's total matches its lines plus shipping")
    return "orders"
