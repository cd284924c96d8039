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

``generate(seed, scale)``: at ``scale`` > 1 (the hard tier) every table and both CSV
files hold at least ``scale`` times the rows they hold at scale 1, drawn after the
scale-1 shop from a stream of its own (``random.Random(f"{seed}:scale")``), so scale 1
stays byte for byte what it always was.  Among them are distractors, each differing from
another row in one property: namesake customers (same name, segment, sign-up date and
points; another city, and their own id and e-mail address: one customer per address),
order twins (same customer, date, channel, lines and total; a status that never ships)
and supplier twins (same company, contact, address and rating; another city).  The
invariants the faults rely on hold at every scale.
"""

from __future__ import annotations

import csv
import io
import random
import re
from dataclasses import dataclass
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
    return [_customer(fake, rng, cid, places, weights)
            for cid in range(1, rng.randint(24, 55) + 1)]


def _customer(fake: Faker, rng: random.Random, cid: int, places: dict[str, str],
              weights: list[int]) -> tuple:
    first, last = fake.first_name(), fake.last_name()
    city = rng.choices(sorted(places), weights)[0]
    email = f"{first}.{last}{rng.randint(1, 99)}@{fake.free_email_domain()}".lower()
    signup = fake.date_between_dates(date(2022, 1, 1), date(2024, 12, 31)).isoformat()
    return (cid, first, last, email, city, places[city], rng.choice(SEGMENTS), signup,
            rng.randrange(0, 5000, 10))


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
    orders: list[tuple] = []
    items: list[tuple] = []
    for oid in range(1, rng.randint(40, 110) + 1):
        orders.append(_order(fake, rng, oid, customers, products, warehouses, items))
    return orders, items


def _order(fake: Faker, rng: random.Random, oid: int, customers: list[tuple],
           products: list[tuple], warehouses: list[str], items: list[tuple]) -> tuple:
    """Order ``oid``; its lines are appended to ``items``."""
    when = fake.date_between_dates(date(2024, 1, 1), date(2025, 12, 31)).isoformat()
    subtotal = 0.0
    for prod in rng.sample(products, rng.randint(1, 4)):
        qty = rng.choice([1, 1, 1, 2, 2, 3, 4, 5])
        items.append((len(items) + 1, oid, prod[0], qty, prod[3], round(qty * prod[3], 2),
                      rng.choice(warehouses)))
        subtotal += qty * prod[3]
    shipping = rng.choice([0.0, 0.0, 4.99, 7.5, 12.0])
    return (oid, rng.choice(customers)[0], when, rng.choice(STATUSES), rng.choice(CHANNELS),
            shipping, round(subtotal + shipping, 2))


def _csv(header: list[str], rows: list[tuple]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


SUPPLIER_HEADER = ["supplier_id", "company", "contact", "email", "city", "rating"]
SHIPMENT_HEADER = ["shipment_id", "order_id", "carrier", "shipped_date", "weight_kg", "cost"]
SHIPPED = ("shipped", "delivered")


def _suppliers(fake: Faker, rng: random.Random, ids: range) -> list[tuple]:
    return [(sid, fake.company(), fake.name(), fake.company_email(), fake.city(),
             f"{rng.uniform(2.5, 5):.1f}") for sid in ids]


def _shipments(fake: Faker, rng: random.Random, orders: list[tuple], first: int = 1
               ) -> list[tuple]:
    sent = [o for o in orders if o[3] in SHIPPED]
    rows = []
    for sid, order in enumerate(sent, start=first):
        shipped = date.fromisoformat(order[2]) + timedelta(days=rng.randint(0, 6))
        rows.append((sid, order[0], rng.choice(CARRIERS), shipped.isoformat(),
                     f"{rng.uniform(0.2, 12):.2f}", f"{rng.uniform(3, 40):.2f}"))
    return rows


def _twins(scale: int) -> int:
    """How many distractor twins a family gets at ``scale`` (none at 1)."""
    return 0 if scale <= 1 else max(1, scale // 2)


@dataclass
class _Shop:
    customers: list[tuple]
    products: list[tuple]
    orders: list[tuple]
    items: list[tuple]
    shipments: list[tuple]
    suppliers: list[tuple]


def _more_customers(fake: Faker, rng: random.Random, shop: _Shop, scale: int) -> None:
    """(scale - 1) x the customers again, then namesakes: a customer's name, segment,
    sign-up date and points again under a new id in another city (with its state) and,
    one customer per e-mail address, an address of their own."""
    base = shop.customers
    places = {c[4]: c[5] for c in base}
    weights = [rng.randint(1, 5) for _ in places]
    more = [_customer(fake, rng, len(base) + 1 + i, places, weights)
            for i in range((scale - 1) * len(base))]
    emails = {c[3] for c in base + more}
    for c in rng.sample(base, min(len(base), _twins(scale))):
        city = rng.choice(sorted(set(places) - {c[4]}) or [fake.city()])
        email = c[3]
        while email in emails:
            email = f"{c[1]}.{c[2]}{rng.randint(1, 999)}@{c[3].split('@')[1]}".lower()
        emails.add(email)
        more.append((len(base) + len(more) + 1, c[1], c[2], email, city,
                     places.get(city, c[5]), *c[6:]))
    shop.customers = base + more


def _more_products(fake: Faker, rng: random.Random, shop: _Shop, scale: int,
                   n_suppliers: int) -> None:
    """(scale - 1) x the products again, in the seed's categories, under new names (a
    colour of the wider palette on a category's noun)."""
    names = {p[1] for p in shop.products}
    cats = sorted({p[2] for p in shop.products})
    for _ in range((scale - 1) * len(shop.products)):
        cat = rng.choice(cats)
        name = ""
        while not name or name in names:
            colour = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", fake.color_name())
            name = f"{colour} {rng.choice(CATEGORIES[cat])}"
        names.add(name)
        shop.products.append((len(shop.products) + 1, name, cat, _money(rng, 4, 180),
                              rng.randint(0, 250), rng.randint(1, n_suppliers * scale)))


def _more_orders(fake: Faker, rng: random.Random, shop: _Shop, scale: int) -> None:
    """Orders until orders, their lines and the shipments are each ``scale`` x those of
    scale 1; then twins: a sale's order again (same customer, date, channel, lines and
    total) under a new id with a status that never ships (pending, cancelled, refunded)."""
    want = [scale * len(shop.orders), scale * len(shop.items), scale * len(shop.shipments)]
    warehouses = sorted({i[6] for i in shop.items})
    start = len(shop.orders)
    sent = len(shop.shipments)
    while len(shop.orders) < want[0] or len(shop.items) < want[1] or sent < want[2]:
        order = _order(fake, rng, len(shop.orders) + 1, shop.customers, shop.products,
                       warehouses, shop.items)
        shop.orders.append(order)
        sent += order[3] in SHIPPED
    shop.shipments += _shipments(fake, rng, shop.orders[start:], len(shop.shipments) + 1)
    sales = [o for o in shop.orders if o[3] in ("paid", *SHIPPED)]
    for o in rng.sample(sales, min(len(sales), _twins(scale))):
        oid = len(shop.orders) + 1
        lines = [i for i in shop.items if i[1] == o[0]]
        shop.items += [(len(shop.items) + n, oid, *i[2:]) for n, i in enumerate(lines, 1)]
        shop.orders.append((oid, *o[1:3], rng.choice(["pending", "cancelled", "refunded"]),
                            *o[4:]))


def _more_suppliers(fake: Faker, rng: random.Random, shop: _Shop, scale: int) -> None:
    """Suppliers up to ``scale`` x those of scale 1 (the new products' supplier ids), then
    twins: a supplier's company, contact, address and rating again under a new id with
    another city (a second site)."""
    n = len(shop.suppliers)
    shop.suppliers += _suppliers(fake, rng, range(n + 1, n * scale + 1))
    for row in rng.sample(shop.suppliers[:n], min(n, _twins(scale))):
        city = fake.city()
        while city == row[4]:
            city = fake.city()
        shop.suppliers.append((len(shop.suppliers) + 1, *row[1:4], city, row[5]))


def _scaled(seed: int, scale: int, shop: _Shop, n_suppliers: int) -> None:
    """The hard tier's shop: every table and CSV file ``scale`` times as large, with
    distractor twins, drawn from a stream of its own after the scale-1 shop."""
    fake = Faker("en_US")
    fake.seed_instance(f"{seed}:scale")
    rng = random.Random(f"{seed}:scale")
    _more_customers(fake, rng, shop, scale)
    _more_products(fake, rng, shop, scale, n_suppliers)
    _more_orders(fake, rng, shop, scale)
    _more_suppliers(fake, rng, shop, scale)


def layout(seed: int, scale: int = 1) -> list[str]:
    """The paths :func:`generate` lays out (the same for every seed and scale)."""
    return sorted([".seed/shop.sql", "incoming/shipments.csv", "incoming/suppliers.csv",
                   "shop.db"])


def generate(seed: int, scale: int = 1) -> dict[str, bytes]:
    """The seeded workspace as ``{relative path: bytes}``; identical for identical seeds.

    ``scale`` > 1 (the hard tier) makes every table and CSV file ``scale`` times as large
    and adds distractor twins (:func:`_scaled`); scale 1 is the shop as it always was."""
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    n_suppliers = rng.randint(4, 9)
    customers = _customers(fake, rng)
    products = _products(fake, rng, n_suppliers)
    orders, items = _orders(fake, rng, customers, products)
    shop = _Shop(customers, products, orders, items, _shipments(fake, rng, orders),
                 _suppliers(fake, rng, range(1, n_suppliers + 1)))
    if scale > 1:
        _scaled(seed, scale, shop, n_suppliers)
    script = ("BEGIN;\n" + SCHEMA + _inserts("customers", shop.customers)
              + _inserts("products", shop.products) + _inserts("orders", shop.orders)
              + _inserts("order_items", shop.items) + "COMMIT;\n")
    return {
        ".seed/shop.sql": script.encode(),
        "incoming/shipments.csv": _csv(SHIPMENT_HEADER, shop.shipments),
        "incoming/suppliers.csv": _csv(SUPPLIER_HEADER, shop.suppliers),
        "shop.db": b"",
    }
