"""The built-in ``sql`` ecosystem without Docker: seed, probe, samplers and spec.

The database is built with Python's sqlite3 module from the seed script (what ``setup``
does with the sqlite3 shell), and the probe runs as the sandbox would run it.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import shutil
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from environments.ecosystems import load_ecosystem
from tasks.core.commands import render_command, render_shell
from tests.support.probes import run_probe

SQL = load_ecosystem("sql")
BASE = ("customers", "products", "orders", "order_items")
IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")


def _build(tmp_path: Path, seed: int, fault: str | None = None) -> Path:
    for rel, data in SQL.seed_state(seed, fault).items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    con = sqlite3.connect(tmp_path / "shop.db")
    con.executescript((tmp_path / ".seed/shop.sql").read_text())
    con.close()
    shutil.rmtree(tmp_path / ".seed")
    return tmp_path


def _probe(path: Path) -> dict:
    return run_probe(SQL, path)


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> tuple[Path, dict]:
    root = _build(tmp_path_factory.mktemp("shop"), 17)
    return root, _probe(root)


def _rng(tag: str = "") -> random.Random:
    return random.Random(f"test:{tag}")


# ---- spec and seed ----------------------------------------------------------------------

def test_spec_loads_with_enough_typed_tools():
    spec = SQL.spec
    assert len(spec.tools) >= 10
    assert {"tables", "schema", "indexes", "files"} <= set(spec.probe_sections)
    writes = [t for t in spec.tools if t.effect == "write"]
    assert all(t.returns.from_param for t in writes)
    # a fan-in tool: two typed table inputs
    join = spec.tool("join_tables")
    assert [p.name for p in join.params if p.typed] == ["db", "left", "right"]
    # outputs chain: views and tables feed table consumers, exports feed the importer
    consumers = {t.name for t in spec.tools for p in t.params
                 if p.typed and p.type.startswith("sql.table")}
    assert {"count_rows", "export_table_csv", "join_tables", "update_rows"} <= consumers


def test_same_seed_same_bytes_different_seed_different_bytes():
    assert SQL.seed_state(42) == SQL.seed_state(42)
    assert SQL.seed_state(42) != SQL.seed_state(43)
    assert SQL.state_paths(42) == sorted(SQL.seed_state(42))


def test_seeded_state_is_typed():
    paths = SQL.state_paths(5)
    assert SQL.state_type("shop.db") == "sql.db"
    assert {SQL.state_type(p) for p in paths} >= {"sql.db", "file.text.csv"}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_shop_is_realistic_and_consistent(tmp_path, seed):
    con = sqlite3.connect(_build(tmp_path, seed) / "shop.db")
    count = {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in BASE}
    assert count["customers"] >= 20 and count["products"] >= 10
    assert count["order_items"] >= count["orders"] >= 30
    emails = [r[0] for r in con.execute("SELECT email FROM customers")]
    assert all("@" in e for e in emails) and len(set(emails)) == len(emails)
    assert con.execute("SELECT COUNT(DISTINCT city) FROM customers").fetchone()[0] >= 3
    for child, parent, key in [("orders", "customers", "customer_id"),
                               ("order_items", "orders", "order_id"),
                               ("order_items", "products", "product_id")]:
        dangling = con.execute(f"SELECT COUNT(*) FROM {child} WHERE {key} NOT IN "
                               f"(SELECT {key} FROM {parent})").fetchone()[0]
        assert dangling == 0, (child, key)
    shipments = list(csv.DictReader((tmp_path / "incoming/shipments.csv").open()))
    orders = {r[0] for r in con.execute("SELECT order_id FROM orders")}
    assert shipments and all(int(s["order_id"]) in orders for s in shipments)


def test_sizes_vary_with_the_seed(tmp_path):
    sizes = set()
    for seed in range(4):
        con = sqlite3.connect(_build(tmp_path / str(seed), seed) / "shop.db")
        sizes.add(tuple(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in BASE))
    assert len(sizes) == 4


# ---- probe ------------------------------------------------------------------------------

def test_probe_is_canonical_and_hides_internals(shop):
    root, state = shop
    assert set(state) == {"tables", "schema", "indexes", "files"}
    assert set(state["tables"]) == set(BASE)
    assert state["schema"]["orders"] == {  # the columns in the table's order
        "type": "table",
        "columns": ["order_id", "customer_id", "order_date", "status", "channel",
                    "shipping_cost", "total"]}
    rows = state["tables"]["products"]
    assert rows == sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    assert all(isinstance(v, str) for r in rows for v in r.values())
    assert set(state["files"]) == {"incoming/shipments.csv", "incoming/suppliers.csv"}
    assert _probe(root) == state  # same state, same output


def test_probe_sees_views_indexes_and_exports(tmp_path):
    root = _build(tmp_path, 4)
    con = sqlite3.connect(root / "shop.db")
    con.executescript("CREATE VIEW v AS SELECT * FROM orders WHERE status = 'paid';"
                      "CREATE UNIQUE INDEX ix ON customers (email);"
                      "CREATE TABLE t (n TEXT); INSERT INTO t VALUES ('12.5');")
    con.close()
    (root / "exports").mkdir()
    (root / "exports/x.csv").write_text("a,b\n1,2\n")
    (root / "answer.txt").write_text("7\n")
    state = _probe(root)
    assert state["schema"]["v"]["type"] == "view"
    assert {r["status"] for r in state["tables"]["v"]} == {"paid"}
    assert state["indexes"] == {"ix": {"table": "customers", "columns": ["email"],
                                       "unique": True}}
    assert state["tables"]["t"] == [{"n": "12.5"}]
    assert state["files"]["exports/x.csv"] == "a,b\n1,2\n"
    assert "answer.txt" not in state["files"]


# ---- samplers ---------------------------------------------------------------------------

def _sample(facet: str, state: dict, tag: str = "", **context: str) -> str:
    return SQL.sample(facet, state, _rng(tag + facet), **context)


def test_table_and_column_samplers_return_identifiers(shop):
    _, state = shop
    for i in range(10):
        table = _sample("filter_table", state, str(i))
        assert table in BASE
        for facet in ("filter_column", "numeric_column", "index_column", "set_column"):
            assert IDENT.match(_sample(facet, state, str(i), table=table))
    assert _sample("base_table", state) in BASE


def test_filter_value_selects_some_rows_but_not_all(shop):
    _, state = shop
    for i in range(20):
        table = _sample("filter_table", state, str(i))
        column = _sample("filter_column", state, str(i), table=table)
        value = _sample("filter_value", state, str(i), table=table, column=column)
        rows = state["tables"][table]
        assert 0 < sum(r[column] == value for r in rows) < len(rows)


def test_threshold_keeps_a_proper_subset(shop):
    _, state = shop
    for i in range(20):
        table = _sample("filter_table", state, str(i))
        column = _sample("numeric_column", state, str(i), table=table)
        limit = float(_sample("threshold", state, str(i), table=table, column=column))
        rows = state["tables"][table]
        assert 0 < sum(float(r[column]) > limit for r in rows) < len(rows)


@pytest.mark.parametrize("table,key", [("customers", "customer_id"), ("orders", "order_id"),
                                       ("order_items", "item_id"), ("products", "product_id")])
def test_ranking_samplers(shop, table, key):
    _, state = shop
    assert _sample("row_key", state, table=table) == key
    limit = int(_sample("top_count", state, table=table))
    assert 2 <= limit < len(state["tables"][table])
    column = _sample("numeric_column", state, table=table)
    label = _sample("label_column", state, table=table, column=column)
    assert IDENT.match(label) and label != column
    with pytest.raises(LookupError):
        _sample("row_key", {"tables": {"t": [{"a": "x"}] * 3},
                            "schema": {"t": {"type": "table", "columns": ["a"]}}}, table="t")


def test_set_value_changes_at_least_one_selected_row(shop):
    _, state = shop
    for i in range(20):
        ctx = {"table": _sample("filter_table", state, str(i))}
        ctx["where_column"] = _sample("filter_column", state, str(i), **ctx)
        ctx["where_value"] = _sample("filter_value", state, str(i), table=ctx["table"],
                                     where_column=ctx["where_column"])
        ctx["column"] = _sample("set_column", state, str(i), **ctx)
        value = _sample("set_value", state, str(i), **ctx)
        assert ctx["column"] != ctx["where_column"]
        selected = [r for r in state["tables"][ctx["table"]]
                    if r[ctx["where_column"]] == ctx["where_value"]]
        assert any(r[ctx["column"]] != value for r in selected)


@pytest.mark.parametrize("table", BASE)
def test_insert_values_make_a_new_row_with_a_new_id(shop, table):
    _, state = shop
    columns = _sample("insert_columns", state, table=table)
    values = _sample("insert_values", state, table=table, columns=columns).split(" | ")
    row = dict(zip(columns.split(","), values, strict=True))
    assert set(row) == set(state["schema"][table]["columns"])
    key = {"customers": "customer_id", "products": "product_id", "orders": "order_id",
           "order_items": "item_id"}[table]
    assert int(row[key]) == max(int(r[key]) for r in state["tables"][table]) + 1
    if table == "customers":
        assert row["email"] not in {r["email"] for r in state["tables"]["customers"]}


def test_join_columns_and_city(shop):
    _, state = shop
    assert _sample("join_columns", state, left="orders", right="customers") == "customer_id"
    assert _sample("join_columns", state, left="orders", right="orders") == ",".join(
        sorted(state["schema"]["orders"]["columns"]))
    with pytest.raises(LookupError):
        _sample("join_columns", state, left="customers", right="products")
    city = _sample("city", state)
    assert city in {r["city"] for r in state["tables"]["customers"]}


def test_samplers_raise_lookup_error_when_nothing_fits():
    empty = {"tables": {"t": [{"a": "1"}]}, "schema": {"t": {"type": "table", "columns": ["a"]}}}
    for facet in ("filter_column", "numeric_column"):
        with pytest.raises(LookupError):
            SQL.sample(facet, empty, _rng(), table="t")
    with pytest.raises(LookupError):
        SQL.sample("base_table", empty, _rng())


# ---- commands ---------------------------------------------------------------------------

def test_values_are_sql_literals_inside_double_quotes():
    tool = SQL.spec.tool("insert_row")
    cmd = render_command(tool, {"db": "shop.db", "table": "customers", "columns": "a,b",
                                "values": "O'Neil | $HOME \"x\""})
    assert cmd == ('sqlite3 shop.db "INSERT INTO customers (a,b) VALUES '
                   "('O''Neil', '\\$HOME \\\"x\\\"')\"")


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="sqlite3 shell not installed")
def test_rendered_commands_run_in_the_sqlite3_shell(tmp_path):
    root = _build(tmp_path, 9)
    state = _probe(root)
    table = "customers"
    columns = _sample("insert_columns", state, table=table)
    values = _sample("insert_values", state, table=table, columns=columns)
    cmd = render_command(SQL.spec.tool("insert_row"),
                         {"db": "shop.db", "table": table, "columns": columns, "values": values})
    subprocess.run(["bash", "-c", cmd], cwd=root, check=True)
    after = _probe(root)
    added = [r for r in after["tables"][table] if r not in state["tables"][table]]
    assert [added[0][c] for c in columns.split(",")] == values.split(" | ")
    cmd = render_command(SQL.spec.tool("export_table_csv"),
                         {"db": "shop.db", "table": "products", "out": "exports/p.csv"})
    subprocess.run(["bash", "-c", cmd], cwd=root, check=True)
    rows = list(csv.DictReader(io.StringIO((root / "exports/p.csv").read_text())))
    assert Counter(json.dumps(r, sort_keys=True) for r in rows) == Counter(
        json.dumps(r, sort_keys=True) for r in after["tables"]["products"])


def test_a_duplicated_customer_is_told_apart_by_email(tmp_path):
    """The planted duplicate shares every column with its original; the key the repair
    deduplicates on is the e-mail address.  Before, ``signup_date`` won where no two kept
    rows shared a date: "of the rows that share the same signup_date" deletes two people
    who signed up on one day."""
    keys = set()
    for seed in range(8):
        root = _build(tmp_path / str(seed), seed, "duplicate_customer")
        keys.add(_sample("duplicate_key", _probe(root), str(seed), table="customers"))
    assert keys == {"email"}


# ---- chained lookups: a customer's latest order, the best seller ------------------------

def _shop_at(root: Path, seed: int, scale: int) -> sqlite3.Connection:
    for rel, data in SQL.seed_state(seed, scale=scale).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    con = sqlite3.connect(root / "shop.db")
    con.executescript((root / ".seed/shop.sql").read_text())
    shutil.rmtree(root / ".seed")
    return con


def _each(root: Path, tool: str, args: dict[str, str]) -> list[str]:
    """What the tool's command and each of its alternatives print, in that order; a
    write's commands each get a new table (``out`` with a number appended)."""
    spec = SQL.spec.tool(tool)
    outs = []
    for n, cmd in enumerate([spec.command, *spec.alternatives]):
        given = {"db": "shop.db", **args}
        if "out" in given and n:
            given["out"] += str(n)
        outs.append(subprocess.run(["bash", "-c", render_command(
            spec.model_copy(update={"command": cmd}), given)], cwd=root, check=True,
            capture_output=True, text=True).stdout.strip())
    return outs


def _run(root: Path, tool: str, **args: str) -> str:
    """A read's output; each of its alternatives prints the same."""
    outs = set(_each(root, tool, args))
    assert len(outs) == 1, (tool, args, outs)
    return outs.pop()


def _rows(con: sqlite3.Connection, table: str) -> list[tuple]:
    return sorted(con.execute(f"SELECT * FROM {table}").fetchall())


def test_a_tie_for_the_top_line_is_ambiguous(tmp_path):
    con = _shop_at(tmp_path, 3, 1)
    (order,) = con.execute("SELECT order_id FROM order_items "
                           "GROUP BY order_id HAVING COUNT(*) > 1 LIMIT 1").fetchone()
    check = render_shell(SQL.spec.tool("top_line_product").ambiguity_check or "",
                         {"db": "shop.db", "order": str(order)})
    con.execute("UPDATE order_items SET line_total = 9999 WHERE order_id = ?", (order,))
    con.commit()
    assert subprocess.run(["bash", "-c", check], cwd=tmp_path).returncode == 1


def test_order_and_product_ids_are_taken_only_by_their_tools():
    takers = {t: sorted(x.name for x in SQL.spec.tools for p in x.params
                        if p.typed and p.type == t)
              for t in ("sql.customer_id", "sql.order_id", "sql.product_id")}
    assert takers == {"sql.customer_id": ["customer_orders", "latest_order"],
                      "sql.order_id": ["order_lines", "top_line_product"],
                      "sql.product_id": ["product_orders"]}
    for name in ("latest_order", "top_line_product", "best_seller"):
        assert SQL.spec.tool(name).observes_value


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="sqlite3 shell not installed")
@pytest.mark.parametrize(("seed", "scale"), [(3, 1), (11, 1), (4, 10)])
def test_latest_order_and_best_seller_on_a_seeded_shop(tmp_path, seed, scale):
    con = _shop_at(tmp_path, seed, scale)
    customer = _run(tmp_path, "most_orders_customer")
    orders = con.execute("SELECT order_date, order_id FROM orders WHERE customer_id = ?",
                         (int(customer),)).fetchall()
    order = _run(tmp_path, "latest_order", customer=customer)
    assert int(order) == max(orders)[1]
    _each(tmp_path, "order_lines", {"order": order, "out": "lines"})
    lines = _rows(con, "lines")
    assert lines and lines == _rows(con, "lines1") == sorted(con.execute(
        "SELECT * FROM order_items WHERE order_id = ?", (int(order),)).fetchall())
    top = _run(tmp_path, "top_line_product", order=order)
    totals = dict(con.execute("SELECT product_id, line_total FROM order_items "
                              "WHERE order_id = ?", (int(order),)))
    assert totals[int(top)] == max(totals.values())
    check = render_shell(SQL.spec.tool("top_line_product").ambiguity_check or "",
                         {"db": "shop.db", "order": order})
    unique = list(totals.values()).count(max(totals.values())) == 1
    assert (subprocess.run(["bash", "-c", check], cwd=tmp_path).returncode == 0) == unique

    units: Counter[int] = Counter()
    for product, quantity in con.execute(
            "SELECT product_id, quantity FROM order_items JOIN orders USING (order_id) "
            "WHERE status = 'delivered'"):
        units[product] += quantity
    product = _run(tmp_path, "best_seller", status="delivered")
    assert int(product) == min(units, key=lambda p: (-units[p], p))
    _each(tmp_path, "product_orders", {"product": product, "out": "sold"})
    ids = {o for (o,) in con.execute("SELECT order_id FROM order_items WHERE product_id = ?",
                                     (int(product),))}
    got = _rows(con, "sold")
    assert got == _rows(con, "sold1") and [r[0] for r in got] == sorted(ids)
    assert [d[1] for d in con.execute("PRAGMA table_info(sold)")] == [
        d[1] for d in con.execute("PRAGMA table_info(orders)")]


def test_id_samplers_draw_seeded_ids(shop):
    _, state = shop
    order = _sample("placed_order", state)
    assert order in {o["order_id"] for o in state["tables"]["orders"]}
    product = _sample("sold_product", state)
    assert product in {i["product_id"] for i in state["tables"]["order_items"]}
