"""Deterministic seed state for the ``sql`` ecosystem: same seed, same bytes.

A small online shop.  ``generate`` returns the SQL script that builds the database
(``.seed/shop.sql``: tables ``customers``, ``products``, ``orders``, ``order_items``), an
empty ``shop.db`` that the ecosystem's ``setup`` fills from that script, and two CSV files
a solver may import (``incoming/suppliers.csv``, ``incoming/shipments.csv``).

Every base table has an ``INTEGER PRIMARY KEY`` first column named ``<thing>_id``; foreign
keys (``customer_id``, ``product_id``, ``order_id``, ``supplier_id``) point at existing
rows, and every table has both text columns with repeating values and numeric columns.
Values come from Faker; row counts, the sets of cities, warehouses and categories vary
with the seed.  Only absolute date ranges are used, so the bytes never depend on the day.
"""

from __future__ import annotations

import csv
import io
import random
from datetime import date, timedelta

from faker import Faker

CATEGORIES = {
    "kitchen": ["Kettle", "Skillet", "Cutting Board", "Knife Set", "Coffee Grinder", "Teapot"],
    "garden": ["Hose Reel", "Pruning Shears", "Planter", "Watering Can", "Bird Feeder"],
    "office": ["Desk Lamp", "Notebook", "Stapler", "Monitor Stand", "Desk Organizer"],
    "sports": ["Yoga Mat", "Water Bottle", "Jump Rope", "Dumbbell Pair", "Gym Bag"],
    "electronics": ["USB Hub", "Headphones", "Phone Charger", "Bluetooth Speaker", "Webcam"],
    "toys": ["Puzzle", "Building Blocks", "Kite", "Plush Bear", "Board Game"],
    "home": ["Throw Blanket", "Candle", "Wall Clock", "Picture Frame", "Doormat"],
}
SEGMENTS = ["consumer", "consumer", "consumer", "corporate", "home_office"]
STATUSES = ["pending", "paid", "paid", "shipped", "shipped", "delivered", "delivered",
            "delivered", "cancelled", "refunded"]
CHANNELS = ["web", "web", "web", "mobile", "mobile", "store", "phone"]
CARRIERS = ["UPS", "FedEx", "USPS", "DHL"]

SCHEMA = """\
CREATE TABLE customers (
  customer_id INTEGER PRIMARY KEY,
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  email TEXT NOT NULL,
  city TEXT NOT NULL,
  state TEXT NOT NULL,
  segment TEXT NOT NULL,
  signup_date TEXT NOT NULL,
  loyalty_points INTEGER NOT NULL
);
CREATE TABLE products (
  product_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  category TEXT NOT NULL,
  price REAL NOT NULL,
  stock INTEGER NOT NULL,
  supplier_id INTEGER NOT NULL
);
CREATE TABLE orders (
  order_id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
  order_date TEXT NOT NULL,
  status TEXT NOT NULL,
  channel TEXT NOT NULL,
  shipping_cost REAL NOT NULL,
  total REAL NOT NULL
);
CREATE TABLE order_items (
  item_id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders(order_id),
  product_id INTEGER NOT NULL REFERENCES products(product_id),
  quantity INTEGER NOT NULL,
  unit_price REAL NOT NULL,
  line_total REAL NOT NULL,
  warehouse TEXT NOT NULL
);
"""


def _lit(value: object) -> str:
    """A SQL literal: numbers bare, text single-quoted with '' escaping."""
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _inserts(table: str, rows: list[tuple]) -> str:
    return "".join(f"INSERT INTO {table} VALUES ({', '.join(map(_lit, r))});\n" for r in rows)


def _money(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 2)


def _customers(fake: Faker, rng: random.Random) -> list[tuple]:
    places: dict[str, str] = {}
    while len(places) < rng.randint(4, 7):
        places[fake.city()] = fake.state_abbr(include_territories=False)
    cities = sorted(places)
    weights = [rng.randint(1, 5) for _ in cities]
    rows = []
    for cid in range(1, rng.randint(24, 55) + 1):
        first, last = fake.first_name(), fake.last_name()
        city = rng.choices(cities, weights)[0]
        email = f"{first}.{last}{rng.randint(1, 99)}@{fake.free_email_domain()}".lower()
        signup = fake.date_between_dates(date(2022, 1, 1), date(2024, 12, 31)).isoformat()
        rows.append((cid, first, last, email, city, places[city], rng.choice(SEGMENTS), signup,
                     rng.randrange(0, 5000, 10)))
    return rows


def _products(fake: Faker, rng: random.Random, n_suppliers: int) -> list[tuple]:
    cats = sorted(rng.sample(sorted(CATEGORIES), rng.randint(4, 6)))
    names: set[str] = set()
    rows = []
    for pid in range(1, rng.randint(15, 32) + 1):
        cat = rng.choice(cats)
        name = f"{fake.safe_color_name().title()} {rng.choice(CATEGORIES[cat])}"
        while name in names:
            name = f"{fake.safe_color_name().title()} {rng.choice(CATEGORIES[cat])}"
        names.add(name)
        rows.append((pid, name, cat, _money(rng, 4, 180), rng.randint(0, 250),
                     rng.randint(1, n_suppliers)))
    return rows


def _orders(fake: Faker, rng: random.Random, customers: list[tuple],
            products: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    warehouses = sorted({fake.city() for _ in range(rng.randint(2, 4))})
    orders, items = [], []
    for oid in range(1, rng.randint(40, 110) + 1):
        when = fake.date_between_dates(date(2024, 1, 1), date(2025, 12, 31)).isoformat()
        subtotal = 0.0
        for prod in rng.sample(products, rng.randint(1, 4)):
            qty = rng.choice([1, 1, 1, 2, 2, 3, 4, 5])
            items.append((len(items) + 1, oid, prod[0], qty, prod[3], round(qty * prod[3], 2),
                          rng.choice(warehouses)))
            subtotal += qty * prod[3]
        shipping = rng.choice([0.0, 0.0, 4.99, 7.5, 12.0])
        orders.append((oid, rng.choice(customers)[0], when, rng.choice(STATUSES),
                       rng.choice(CHANNELS), shipping, round(subtotal + shipping, 2)))
    return orders, items


def _csv(header: list[str], rows: list[tuple]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _suppliers(fake: Faker, rng: random.Random, n: int) -> bytes:
    rows = [(sid, fake.company(), fake.name(), fake.company_email(), fake.city(),
             f"{rng.uniform(2.5, 5):.1f}") for sid in range(1, n + 1)]
    return _csv(["supplier_id", "company", "contact", "email", "city", "rating"], rows)


def _shipments(fake: Faker, rng: random.Random, orders: list[tuple]) -> bytes:
    sent = [o for o in orders if o[3] in ("shipped", "delivered")]
    rows = []
    for sid, order in enumerate(sent, start=1):
        shipped = date.fromisoformat(order[2]) + timedelta(days=rng.randint(0, 6))
        rows.append((sid, order[0], rng.choice(CARRIERS), shipped.isoformat(),
                     f"{rng.uniform(0.2, 12):.2f}", f"{rng.uniform(3, 40):.2f}"))
    return _csv(["shipment_id", "order_id", "carrier", "shipped_date", "weight_kg", "cost"],
                rows)


def layout(seed: int) -> list[str]:
    """The paths :func:`generate` lays out (the same for every seed)."""
    return sorted([".seed/shop.sql", "incoming/shipments.csv", "incoming/suppliers.csv",
                   "shop.db"])


def generate(seed: int) -> dict[str, bytes]:
    """The seeded workspace as ``{relative path: bytes}``; identical for identical seeds."""
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    n_suppliers = rng.randint(4, 9)
    customers = _customers(fake, rng)
    products = _products(fake, rng, n_suppliers)
    orders, items = _orders(fake, rng, customers, products)
    script = ("BEGIN;\n" + SCHEMA + _inserts("customers", customers)
              + _inserts("products", products) + _inserts("orders", orders)
              + _inserts("order_items", items) + "COMMIT;\n")
    return {
        ".seed/shop.sql": script.encode(),
        "incoming/shipments.csv": _shipments(fake, rng, orders),
        "incoming/suppliers.csv": _suppliers(fake, rng, n_suppliers),
        "shop.db": b"",
    }
