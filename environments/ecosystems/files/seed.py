"""Deterministic seed state for the ``files`` ecosystem: same seed, same bytes.

Lays out a small project workspace — application logs, CSV exports, a JSON service
config and prose notes — with realistic values from Faker.  Layout and sizes vary
with the seed so candidates do not all look alike.

``generate(seed, scale)``: at ``scale`` > 1 (the hard tier) each family of entries —
the rows of ``customers.csv`` and ``orders.csv``, each log's lines — holds ``scale``
times the entries it holds at scale 1, drawn after the scale-1 workspace from a stream
of its own (``random.Random(f"{seed}:scale")``), so scale 1 stays byte for byte what it
always was.  Among them are distractors, each differing from another entry in exactly
one property: a customer row under a new id with another city, an order row under a
new order id with another status, a WARN or ERROR line logged again at the same second
at another level or by another component.  Rows stay unique (the faults rely on it).
"""

from __future__ import annotations

import json
import random
import string
import threading
from collections.abc import Callable
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


def _fields(fake: Faker, rng: random.Random) -> dict[str, Callable[[], object]]:
    return {
        "email": fake.email, "ip": fake.ipv4_private, "uuid": lambda: fake.uuid4()[:8],
        "ms": lambda: rng.randint(3, 4000), "word": fake.word, "n": lambda: rng.randint(1, 99),
        "status": lambda: rng.choice([400, 403, 404, 500, 502, 503]), "host": fake.hostname,
        "port": lambda: rng.choice([5432, 6379, 8080, 9200]), "attempt": lambda: rng.randint(2, 5),
        "date": lambda: fake.date_between_dates(date(2026, 1, 1), date(2026, 12, 31)).isoformat(),
        "amount": lambda: f"{rng.uniform(5, 900):.2f}", "pct": lambda: rng.randint(50, 99),
    }


def _log_lines(fake: Faker, rng: random.Random, t: datetime, lines: int,
               components: list[str]) -> list[str]:
    """``lines`` log lines after time ``t``, each a few seconds to minutes after the last."""
    fields, out = _fields(fake, rng), []
    for _ in range(lines):
        t += timedelta(seconds=rng.randint(1, 90))
        template = rng.choice(LOG_EVENTS)
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
        event = template.format(**{name: fields[name]() for name in names})
        level = rng.choice(LEVELS)
        out.append(f"{t:%Y-%m-%dT%H:%M:%SZ} {level:<5} [{rng.choice(components)}] {event}")
    return out


def _log(fake: Faker, rng: random.Random, start: datetime, lines: int) -> str:
    components = sorted({fake.word() for _ in range(6)})
    return "\n".join(_log_lines(fake, rng, start, lines, components)) + "\n"


def _csv(header: list[str], rows: list[list[object]]) -> str:
    lines = [",".join(header)] + [",".join(str(v).replace(",", " ") for v in r) for r in rows]
    return "\n".join(lines) + "\n"


def _customer_rows(fake: Faker, rng: random.Random, ids: list[int]) -> list[list[object]]:
    signup = lambda: fake.date_between_dates(date(2022, 1, 1), date(2025, 12, 31)).isoformat()  # noqa: E731
    return [[i, fake.first_name(), fake.last_name(), fake.free_email(), fake.city(),
             rng.choice(PLANS), signup(), f"{rng.uniform(0, 5000):.2f}"] for i in ids]


def _customers(fake: Faker, rng: random.Random, n: int) -> tuple[str, list[int]]:
    ids = rng.sample(range(1000, 9999), n)
    rows = _customer_rows(fake, rng, ids)
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


def _faker(seed: int | str) -> Faker:
    fake = getattr(_LOCAL, "fake", None)
    if fake is None:
        fake = _LOCAL.fake = Faker("en_US")
    fake.seed_instance(seed)
    return fake


def _fresh_ids(rng: random.Random, taken: set[int], n: int, low: int, high: int) -> list[int]:
    """``n`` new distinct ids in [low, high) (widened when too few are free)."""
    high = max(high, low + 4 * (len(taken) + n))
    out: list[int] = []
    while len(out) < n:
        i = rng.randint(low, high - 1)
        if i not in taken:
            taken.add(i)
            out.append(i)
    return out


def _rows_of(text: str) -> list[list[str]]:
    return [line.split(",") for line in text.splitlines()[1:]]


def _append(text: str, rows: list[list[object]]) -> str:
    return text + "".join(",".join(str(v).replace(",", " ") for v in r) + "\n" for r in rows)


def _twin(rng: random.Random, row: list[str], key: object, column: int,
          other: Callable[[], object]) -> list[object]:
    """A copy of ``row`` under its own ``key`` whose ``column`` holds another value."""
    value = other()
    while str(value).replace(",", " ") == row[column]:
        value = other()
    twin: list[object] = [key, *row[1:]]
    twin[column] = value
    return twin


def _more_customers(fake: Faker, rng: random.Random, text: str, scale: int) -> str:
    """(scale - 1) x the customers again, plus twins: another customer's row under a new
    id with another city (a namesake: every other field the same)."""
    rows = _rows_of(text)
    taken = {int(r[0]) for r in rows}
    extra = _customer_rows(fake, rng, _fresh_ids(rng, taken, (scale - 1) * len(rows), 1000,
                                                  9999))
    twins = [_twin(rng, r, key, 4, fake.city) for r, key in
             zip(rng.sample(rows, min(len(rows), _twins(scale))),
                 _fresh_ids(rng, taken, _twins(scale), 1000, 9999), strict=True)]
    new = extra + twins
    rng.shuffle(new)
    return _append(text, new)


def _more_orders(fake: Faker, rng: random.Random, text: str, customers: str,
                 scale: int) -> str:
    """(scale - 1) x the orders again, plus twins: an order's row under a new order id
    with another status."""
    rows = _rows_of(text)
    ids = [int(r[0]) for r in _rows_of(customers)]
    products = sorted({r[2] for r in rows})
    taken = {int(r[0].removeprefix("ORD-")) for r in rows}
    fresh = _fresh_ids(rng, taken, (scale - 1) * len(rows) + _twins(scale), 100000, 999999)
    new: list[list[object]] = [
        [f"ORD-{oid}", rng.choice(ids), rng.choice(products), rng.randint(1, 12),
         f"{rng.uniform(2, 250):.2f}", rng.choice(STATUSES)] for oid in fresh[_twins(scale):]]
    picked = rng.sample(rows, min(len(rows), _twins(scale)))
    new += [_twin(rng, r, f"ORD-{oid}", 5, lambda: rng.choice(STATUSES))
            for r, oid in zip(picked, fresh, strict=False)]
    rng.shuffle(new)
    return _append(text, new)


def _more_log(fake: Faker, rng: random.Random, text: str, scale: int) -> str:
    """(scale - 1) x the log's lines again, continuing its clock, with twins: a warning or
    error logged again at the same second with another level, or by another component."""
    lines = text.splitlines()
    components = sorted({line.split("[", 1)[1].split("]", 1)[0] for line in lines})
    last = datetime.strptime(lines[-1][:20], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    lines += _log_lines(fake, rng, last, (scale - 1) * len(lines), components)
    loud = [i for i, line in enumerate(lines) if line[21:26].strip() in ("WARN", "ERROR")]
    for i in sorted(rng.sample(loud, min(len(loud), 2 * _twins(scale))), reverse=True):
        stamp, level, rest = lines[i][:20], lines[i][21:26].strip(), lines[i][27:]
        if rng.random() < 0.5 and len(components) > 1:
            comp = rest[1:].split("]", 1)[0]
            other = rng.choice([c for c in components if c != comp])
            twin = f"{stamp} {level:<5} [{other}]{rest.split(']', 1)[1]}"
        else:
            other = rng.choice([lv for lv in ("INFO", "WARN", "ERROR") if lv != level])
            twin = f"{stamp} {other:<5} {rest}"
        lines.insert(i + 1, twin)
    return "\n".join(lines) + "\n"


def _twins(scale: int) -> int:
    """How many distractor twins a family gets at ``scale`` (none at 1)."""
    return 0 if scale <= 1 else max(1, scale // 2)


def _scaled(files: dict[str, str], seed: int, scale: int) -> dict[str, str]:
    """The hard tier's workspace: every family of entries ``scale`` times as large, drawn
    from a stream of its own so that the scale-1 files stay as they are."""
    stream = f"{seed}:scale"
    fake, rng = _faker(stream), random.Random(stream)
    out = dict(files)
    for path in sorted(p for p in files if p.startswith("logs/")):
        out[path] = _more_log(fake, rng, files[path], scale)
    out["data/customers.csv"] = _more_customers(fake, rng, files["data/customers.csv"], scale)
    out["data/orders.csv"] = _more_orders(fake, rng, files["data/orders.csv"],
                                          out["data/customers.csv"], scale)
    return out


def layout(seed: int, scale: int = 1) -> list[str]:
    """The paths :func:`generate` lays out for ``seed`` (at any ``scale``), without
    generating content."""
    service = _faker(seed).word()
    return sorted([f"logs/{service}.log", "logs/worker.log", "data/customers.csv",
                   "data/orders.csv", f"config/{service}.json", "docs/notes.txt", "out/.keep"])


def generate(seed: int, scale: int = 1) -> dict[str, bytes]:
    """The seeded workspace as ``{relative path: bytes}``; identical for identical seeds.

    ``scale`` > 1 (the hard tier) makes every family of entries (customers, orders, each
    log's lines) ``scale`` times as large and adds distractor twins (:func:`_scaled`);
    scale 1 is the workspace as it always was.  Only absolute date ranges are used, so the
    bytes do not depend on the day it runs.
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
    if scale > 1:
        files = _scaled(files, seed, scale)
    return {path: text.encode() for path, text in sorted(files.items())}
