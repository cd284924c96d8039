"""The built-in ``sql`` ecosystem in real containers.

1. Candidates planned over the ecosystem go through the whole pipeline (docker backend)
   and most are accepted, each with gate baseline 0 and reference 1.
2. Every tool runs by hand, once, on a seeded shop: its real output (the answer it prints
   or the probe entry it changes) equals what Python computes from the probed rows.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
from collections import Counter

import pytest

from environments.docker.config import DockerConfig
from environments.ecosystems import load_ecosystem
from flows.run.providers import close_run, provider_for
from tasks.core.commands import render_command, render_shell
from tasks.execute.realize import probe, realize
from tests.support.candidates import build_planned

pytestmark = pytest.mark.docker

RUN_ID = f"itest-eco-sql-{os.getpid()}"  # unique: other checkouts may share the engine
SQL = load_ecosystem("sql")


@pytest.fixture(scope="module")
def backend():
    yield DockerConfig()
    close_run(RUN_ID)


def test_candidates_are_accepted_with_gate_results(backend):
    accepted, rejected = build_planned(SQL, 15, backend, RUN_ID)
    assert len(accepted) >= 12, rejected


# ---- every tool, by hand ----------------------------------------------------------------

def _key(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


def _same_rows(got: list[dict] | None, want: list[dict]) -> bool:
    return got is not None and Counter(map(_key, got)) == Counter(map(_key, want))


def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


class Shop:
    """A realized seeded shop in one sandbox; runs tools and samples like the executor."""

    def __init__(self, sandbox, seed: int):
        self.sb, self.seed, self.ran = sandbox, seed, set()
        realize(sandbox, SQL, seed)

    def state(self) -> dict:
        return probe(self.sb, SQL)

    def args(self, tool_name: str, **bound: str) -> dict[str, str]:
        tool = SQL.spec.tool(tool_name)
        args = {"db": "shop.db", **bound}
        for p in tool.params:
            if p.name in args:
                continue
            if p.fresh:
                args[p.name] = p.fresh.replace("{n}", "")
            else:
                assert p.sample, f"{tool_name}.{p.name} must be bound by the test"
                context = {w: args[w] for w in p.sample.with_}
                rng = random.Random(f"{self.seed}:{tool_name}:{p.name}")
                args[p.name] = SQL.sample(p.sample.facet, self.state(), rng, **context)
        return args

    def run(self, tool_name: str, args: dict[str, str]) -> str:
        result = self.sb.exec(["bash", "-c", render_command(SQL.spec.tool(tool_name), args)],
                              timeout=30)
        assert result.exit_code == 0, (tool_name, result.stderr)
        self.ran.add(tool_name)
        return result.stdout.strip()


@pytest.fixture(scope="module")
def shop(backend):
    with provider_for(backend, RUN_ID).sandbox() as sb:
        yield Shop(sb, seed=2024)


def test_every_tool_by_hand(shop):
    before = shop.state()
    tables = before["tables"]

    # reads over the shop's own tables
    out = shop.run("describe_table", shop.args("describe_table", table="customers"))
    assert out == ("customer_id INTEGER, first_name TEXT, last_name TEXT, email TEXT, "
                   "city TEXT, state TEXT, segment TEXT, signup_date TEXT, "
                   "loyalty_points INTEGER")
    a = shop.args("count_where", table="orders")
    out = shop.run("count_where", a)
    assert int(out) == sum(r[a["column"]] == a["value"] for r in tables["orders"]) > 0
    out = shop.run("count_rows", shop.args("count_rows", table="order_items"))
    assert int(out) == len(tables["order_items"])
    a = shop.args("sum_column", table="orders", column="total")
    out = shop.run("sum_column", a)
    assert abs(float(out) - sum(float(r["total"]) for r in tables["orders"])) < 0.006
    a = shop.args("avg_where", table="products", column="price", where_column="category")
    out = shop.run("avg_where", a)
    prices = [float(r["price"]) for r in tables["products"] if r["category"] == a["where_value"]]
    assert abs(float(out) - sum(prices) / len(prices)) < 0.006

    a = shop.args("lookup_max", table="products")
    out = shop.run("lookup_max", a)
    best = min(tables["products"], key=lambda r: (-float(r[a["column"]]), int(r[a["key"]])))
    assert out == best[a["label"]]

    # new views and tables
    a = shop.args("create_filtered_view")
    shop.run("create_filtered_view", a)
    state = shop.state()
    assert state["schema"][a["view"]]["type"] == "view"
    assert _same_rows(state["tables"][a["view"]],
                      [r for r in tables[a["table"]] if r[a["column"]] == a["value"]])

    a = shop.args("copy_rows_above", table="orders", column="total")
    shop.run("copy_rows_above", a)
    copy = a["out"]
    want = [r for r in tables["orders"] if float(r["total"]) > float(a["threshold"])]
    assert 0 < len(want) < len(tables["orders"])
    assert _same_rows(shop.state()["tables"][copy], want)

    a = shop.args("filter_to_table", table="orders")
    shop.run("filter_to_table", a)
    subset = [r for r in tables["orders"] if r[a["column"]] == a["value"]]
    assert 0 < len(subset) < len(tables["orders"])
    assert _same_rows(shop.state()["tables"][a["out"]], subset)

    a = shop.args("union_tables", left=a["out"], right=copy)
    shop.run("union_tables", a)
    assert _same_rows(shop.state()["tables"][a["out"]],
                      [json.loads(k) for k in sorted({_key(r) for r in subset + want})])

    a = shop.args("top_rows", table=copy)
    shop.run("top_rows", a)
    ranked = sorted(want, key=lambda r: (-float(r[a["column"]]), float(r[a["key"]])))
    assert 0 < int(a["limit"]) < len(want)
    assert _same_rows(shop.state()["tables"][a["out"]], ranked[:int(a["limit"])])

    a = shop.args("city_orders")
    shop.run("city_orders", a)
    ids = {c["customer_id"] for c in tables["customers"] if c["city"] == a["city"]}
    assert _same_rows(shop.state()["tables"][a["out"]],
                      [o for o in tables["orders"] if o["customer_id"] in ids])

    a = shop.args("import_csv", csv="incoming/shipments.csv")
    shop.run("import_csv", a)
    shipments = _csv_rows(before["files"]["incoming/shipments.csv"])
    assert _same_rows(shop.state()["tables"][a["table"]], shipments)

    a = shop.args("join_tables", left="orders", right=a["table"])
    assert a["using"] == "order_id"
    shop.run("join_tables", a)
    orders = {o["order_id"]: o for o in tables["orders"]}
    assert _same_rows(shop.state()["tables"][a["out"]],
                      [{**orders[s["order_id"]], **s} for s in shipments])

    # in-place changes of a table a step made
    rows = shop.state()["tables"][copy]
    a = shop.args("insert_row", table=copy)
    shop.run("insert_row", a)
    new = dict(zip(a["columns"].split(","), a["values"].split(" | "), strict=True))
    rows = rows + [new]
    assert _same_rows(shop.state()["tables"][copy], rows)

    a = shop.args("update_rows", table=copy)
    shop.run("update_rows", a)
    rows = [{**r, a["column"]: a["value"]} if r[a["where_column"]] == a["where_value"] else r
            for r in rows]
    assert _same_rows(shop.state()["tables"][copy], rows)

    a = shop.args("delete_rows", table=copy)
    shop.run("delete_rows", a)
    rows = [r for r in rows if r[a["column"]] != a["value"]]
    assert _same_rows(shop.state()["tables"][copy], rows)

    a = shop.args("create_index", table=copy)
    shop.run("create_index", a)
    assert shop.state()["indexes"][a["index"]] == {"table": copy, "columns": [a["column"]],
                                                   "unique": False}

    # exports
    a = shop.args("export_table_csv", table=copy)
    shop.run("export_table_csv", a)
    assert _same_rows(_csv_rows(shop.state()["files"][a["out"]]), rows)

    a = shop.args("export_filtered_csv", table="customers")
    shop.run("export_filtered_csv", a)
    text = shop.state()["files"][a["out"]]
    assert text.splitlines()[0].startswith("customer_id,first_name,last_name,email,")
    assert _same_rows(_csv_rows(text),
                      [r for r in tables["customers"] if r[a["column"]] == a["value"]])

    a = shop.args("export_top_csv", table="order_items")
    shop.run("export_top_csv", a)
    ranked = sorted(tables["order_items"],
                    key=lambda r: (-float(r[a["column"]]), int(r[a["key"]])))
    got = _csv_rows(shop.state()["files"][a["out"]])
    assert [_key(r) for r in got] == [_key(r) for r in ranked[:int(a["limit"])]]

    # lookups: one customer_id, which a later step takes
    orders = tables["orders"]
    a = shop.args("top_spender")
    spent: dict[int, float] = {}
    for r in orders:
        if r["status"] == a["status"]:
            spent[int(r["customer_id"])] = spent.get(int(r["customer_id"]), 0) + float(r["total"])
    top = shop.run("top_spender", a)
    assert int(top) == min(spent, key=lambda c: (-round(spent[c], 2), c))
    counts: dict[int, int] = {}
    for r in orders:
        counts[int(r["customer_id"])] = counts.get(int(r["customer_id"]), 0) + 1
    most = shop.run("most_orders_customer", shop.args("most_orders_customer"))
    assert int(most) == min(counts, key=lambda c: (-counts[c], c))
    a = shop.args("customer_orders", customer=top)
    shop.run("customer_orders", a)
    assert _same_rows(shop.state()["tables"][a["out"]],
                      [r for r in orders if int(r["customer_id"]) == int(top)])

    # chained lookups: that customer's most recent order, whose lines a new table holds,
    # and the product of its costliest line, whose orders another one holds
    latest = shop.run("latest_order", shop.args("latest_order", customer=most))
    mine = [r for r in orders if int(r["customer_id"]) == int(most)]
    assert latest == max(mine, key=lambda r: (r["order_date"], int(r["order_id"])))["order_id"]
    a = shop.args("order_lines", order=latest)
    shop.run("order_lines", a)
    lines = [r for r in tables["order_items"] if r["order_id"] == latest]
    assert lines and _same_rows(shop.state()["tables"][a["out"]], lines)
    a = shop.args("top_line_product", order=latest)
    product = shop.run("top_line_product", a)
    assert product == max(lines, key=lambda r: float(r["line_total"]))["product_id"]
    check = render_shell(SQL.spec.tool("top_line_product").ambiguity_check or "", a)
    assert shop.sb.exec(["bash", "-c", check], timeout=30).exit_code == 0
    a = shop.args("product_orders", product=product)
    shop.run("product_orders", a)
    ids = {i["order_id"] for i in tables["order_items"] if i["product_id"] == product}
    assert latest in ids
    assert _same_rows(shop.state()["tables"][a["out"]], [o for o in orders if o["order_id"] in ids])

    a = shop.args("best_seller")
    status = {o["order_id"]: o["status"] for o in orders}
    units: Counter[int] = Counter()
    for i in tables["order_items"]:
        if status.get(i["order_id"]) == a["status"]:
            units[int(i["product_id"])] += int(i["quantity"])
    best = shop.run("best_seller", a)
    assert int(best) == min(units, key=lambda p: (-units[p], p))

    # a lookup of a file: the incoming list with the most lines, which an import can take
    incoming = {p: text for p, text in shop.state()["files"].items()
                if p.startswith("incoming/") and p.endswith(".csv")}
    longest = shop.run("longest_incoming_csv", shop.args("longest_incoming_csv"))
    assert longest.strip() == min(incoming, key=lambda p: (-incoming[p].count("\n"), p))

    # the shop's own tables are untouched by all of this
    after = shop.state()
    assert {t: after["tables"][t] for t in tables} == tables
    # the repair tools run against their planted faults: tests/integration/test_fault_injectors.py
    assert shop.ran == {t.name for t in SQL.spec.tools if not t.repair}
