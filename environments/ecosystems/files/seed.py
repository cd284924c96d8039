"""Deterministic seed state for the ``files`` ecosystem: same seed, same bytes.

Lays out a small project workspace — application logs, CSV exports, a JSON service
config and prose notes — with realistic values from Faker.  Layout and sizes vary
with the seed so candidates do not all look alike.
"""

from __future__ import annotations

import json
import random
import string
import threading
from datetime import UTC, date, datetime, timedelta

from faker import Faker

LEVELS = ["INFO"] * 6 + ["DEBUG"] * 2 + ["WARN"] * 2 + ["ERROR"]
LOG_EVENTS = [
    "user {email} signed in from {ip}",
    "user {email} signed out",
    "request {uuid} completed in {ms}ms",
    "request {uuid} failed with status {status}",
    "cache miss for key {word}:{n}",
    "connection to {host}:{port} refused",
    "retrying job {word}-{n} (attempt {attempt})",
    "scheduled report {word} for {date}",
    "payment {uuid} captured for {amount} USD",
    "disk usage at {pct}% on volume {word}",
]
PLANS = ["free", "starter", "pro", "enterprise"]
STATUSES = ["pending", "paid", "shipped", "refunded", "cancelled"]


def _log(fake: Faker, rng: random.Random, start: datetime, lines: int) -> str:
    components = sorted({fake.word() for _ in range(6)})
    fields = {
        "email": fake.email, "ip": fake.ipv4_private, "uuid": lambda: fake.uuid4()[:8],
        "ms": lambda: rng.randint(3, 4000), "word": fake.word, "n": lambda: rng.randint(1, 99),
        "status": lambda: rng.choice([400, 403, 404, 500, 502, 503]), "host": fake.hostname,
        "port": lambda: rng.choice([5432, 6379, 8080, 9200]), "attempt": lambda: rng.randint(2, 5),
        "date": lambda: fake.date_between_dates(date(2026, 1, 1), date(2026, 12, 31)).isoformat(),
        "amount": lambda: f"{rng.uniform(5, 900):.2f}", "pct": lambda: rng.randint(50, 99),
    }
    t, out = start, []
    for _ in range(lines):
        t += timedelta(seconds=rng.randint(1, 90))
        template = rng.choice(LOG_EVENTS)
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
        event = template.format(**{name: fields[name]() for name in names})
        level = rng.choice(LEVELS)
        out.append(f"{t:%Y-%m-%dT%H:%M:%SZ} {level:<5} [{rng.choice(components)}] {event}")
    return "\n".join(out) + "\n"


def _csv(header: list[str], rows: list[list[object]]) -> str:
    lines = [",".join(header)] + [",".join(str(v).replace(",", " ") for v in r) for r in rows]
    return "\n".join(lines) + "\n"


def _customers(fake: Faker, rng: random.Random, n: int) -> tuple[str, list[int]]:
    ids = rng.sample(range(1000, 9999), n)
    signup = lambda: fake.date_between_dates(date(2022, 1, 1), date(2025, 12, 31)).isoformat()  # noqa: E731
    rows = [[i, fake.first_name(), fake.last_name(), fake.free_email(), fake.city(),
             rng.choice(PLANS), signup(), f"{rng.uniform(0, 5000):.2f}"] for i in ids]
    header = ["customer_id", "first_name", "last_name", "email", "city", "plan", "signup_date",
              "balance"]
    return _csv(header, rows), ids


def _orders(fake: Faker, rng: random.Random, customer_ids: list[int], n: int) -> str:
    products = sorted({fake.word().capitalize() + " " + rng.choice(["Kit", "Pack", "Box", "Set"])
                       for _ in range(8)})
    rows = [[f"ORD-{rng.randint(100000, 999999)}", rng.choice(customer_ids), rng.choice(products),
             rng.randint(1, 12), f"{rng.uniform(2, 250):.2f}", rng.choice(STATUSES)]
            for _ in range(n)]
    return _csv(["order_id", "customer_id", "product", "quantity", "unit_price", "status"], rows)


def _config(fake: Faker, rng: random.Random, name: str) -> str:
    cfg = {
        "service": name,
        "version": f"{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "port": rng.choice([8000, 8080, 8443, 9000, 5000]),
        "region": rng.choice(["eu-west-1", "us-east-1", "ap-south-1", "eu-central-1"]),
        "owner": fake.email(),
        "max_connections": rng.choice([64, 128, 256, 512]),
        "debug": rng.random() < 0.3,
        "log_level": rng.choice(["info", "debug", "warning"]),
        "timeout_seconds": rng.choice([5, 10, 30, 60]),
        "features": sorted({fake.word() for _ in range(3)}),
    }
    return json.dumps(cfg, indent=2, sort_keys=True) + "\n"


_LOCAL = threading.local()  # one Faker per thread (creating one costs ~6 ms), reseeded per use


def _faker(seed: int) -> Faker:
    fake = getattr(_LOCAL, "fake", None)
    if fake is None:
        fake = _LOCAL.fake = Faker("en_US")
    fake.seed_instance(seed)
    return fake


def layout(seed: int) -> list[str]:
    """The paths :func:`generate` lays out for ``seed``, without generating content."""
    service = _faker(seed).word()
    return sorted([f"logs/{service}.log", "logs/worker.log", "data/customers.csv",
                   "data/orders.csv", f"config/{service}.json", "docs/notes.txt", "out/.keep"])


def generate(seed: int) -> dict[str, bytes]:
    """The seeded workspace as ``{relative path: bytes}``; identical for identical seeds.

    Only absolute date ranges are used, so the bytes do not depend on the day it runs.
    """
    fake = _faker(seed)
    rng = random.Random(seed)
    service = fake.word()
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=rng.randint(0, 300))
    customers, ids = _customers(fake, rng, rng.randint(25, 60))
    files = {
        f"logs/{service}.log": _log(fake, rng, start, rng.randint(80, 220)),
        "logs/worker.log": _log(fake, rng, start, rng.randint(40, 120)),
        "data/customers.csv": customers,
        "data/orders.csv": _orders(fake, rng, ids, rng.randint(40, 120)),
        f"config/{service}.json": _config(fake, rng, service),
        "docs/notes.txt": "\n".join(fake.paragraphs(nb=rng.randint(4, 9))) + "\n",
        "out/.keep": "",
    }
    return {path: text.encode() for path, text in sorted(files.items())}
