"""Fault injectors of the ``sql`` ecosystem: ``plant(files, seed)`` appends statements to
the seed script (``.seed/shop.sql``) that break the shop's data the way real ones get
broken (ecosystem.yaml, ``faults``).

Each defect is one a repair tool removes exactly: the repaired tables hold the seeded rows
again.  The seeded shop has positive amounts, trimmed text, one customer per e-mail
address, no order line without its order and order totals equal to their lines plus
shipping, so each defect is the only one of its kind.
"""

from __future__ import annotations

import random
import re

Files = dict[str, bytes]
SCRIPT = ".seed/shop.sql"


def _rng(name: str, seed: int) -> random.Random:
    return random.Random(f"fault:{name}:{seed}")


def _ids(files: Files, table: str) -> list[int]:
    """The ids the seed script inserts into ``table`` (its first column)."""
    text = files[SCRIPT].decode()
    ids = [int(m) for m in re.findall(rf"^INSERT INTO {table} VALUES \((\d+),", text, re.M)]
    if not ids:
        raise LookupError(f"the seed script inserts no rows into {table}")
    return ids


def _append(files: Files, sql: str) -> Files:
    return {**files, SCRIPT: files[SCRIPT] + sql.encode()}


def negative_price(files: Files, seed: int) -> Files:
    """One product's price stored with the wrong sign (an import that read a refund
    column)."""
    product = _rng("negative_price", seed).choice(_ids(files, "products"))
    return _append(files, f"UPDATE products SET price = -price WHERE product_id = {product};\n")


def padded_city(files: Files, seed: int) -> Files:
    """One customer's city with stray spaces around it (typed into a form)."""
    customer = _rng("padded_city", seed).choice(_ids(files, "customers"))
    return _append(files, "UPDATE customers SET city = ' ' || city || '  ' "
                          f"WHERE customer_id = {customer};\n")


def duplicate_customer(files: Files, seed: int) -> Files:
    """One customer entered a second time under a new id (a sign-up submitted twice)."""
    customer = _rng("duplicate_customer", seed).choice(_ids(files, "customers"))
    return _append(files, "INSERT INTO customers SELECT (SELECT max(customer_id) + 1 FROM "
                          "customers), first_name, last_name, email, city, state, segment, "
                          f"signup_date, loyalty_points FROM customers WHERE customer_id = "
                          f"{customer};\n")


def orphaned_items(files: Files, seed: int) -> Files:
    """One or two order lines whose order does not exist (left behind when an order was
    deleted by hand)."""
    rng = _rng("orphaned_items", seed)
    sql = ""
    for item in rng.sample(_ids(files, "order_items"), rng.randint(1, 2)):
        sql += ("INSERT INTO order_items SELECT (SELECT max(item_id) + 1 FROM order_items), "
                "(SELECT max(order_id) + 1 FROM orders), product_id, quantity, unit_price, "
                f"line_total, warehouse FROM order_items WHERE item_id = {item};\n")
    return _append(files, sql)


def wrong_total(files: Files, seed: int) -> Files:
    """One order whose total no longer matches its lines plus shipping (edited by hand)."""
    rng = _rng("wrong_total", seed)
    order = rng.choice(_ids(files, "orders"))
    delta = rng.choice([5, 10, 12.5, 20, 49.99])
    return _append(files, f"UPDATE orders SET total = round(total + {delta}, 2) "
                          f"WHERE order_id = {order};\n")


def negative_shipping(files: Files, seed: int) -> Files:
    """One order's shipping cost stored with the wrong sign (a refund typed into the cost
    field); an order that shipped for free has no sign to lose, so the first order from a
    drawn id on that paid for shipping takes it."""
    order = _rng("negative_shipping", seed).choice(_ids(files, "orders"))
    paid = "SELECT order_id FROM orders WHERE shipping_cost > 0"
    return _append(files, "UPDATE orders SET shipping_cost = -shipping_cost WHERE order_id = "
                          f"coalesce(({paid} AND order_id >= {order} ORDER BY order_id LIMIT 1), "
                          f"({paid} ORDER BY order_id LIMIT 1));\n")


def negative_quantity(files: Files, seed: int) -> Files:
    """One order line's quantity saved with a minus sign (entered as a return)."""
    item = _rng("negative_quantity", seed).choice(_ids(files, "order_items"))
    return _append(files, f"UPDATE order_items SET quantity = -quantity WHERE item_id = {item};\n")


def padded_product_name(files: Files, seed: int) -> Files:
    """One product's name with stray spaces after it (pasted from a spreadsheet)."""
    product = _rng("padded_product_name", seed).choice(_ids(files, "products"))
    return _append(files, "UPDATE products SET name = name || '  ' "
                          f"WHERE product_id = {product};\n")
