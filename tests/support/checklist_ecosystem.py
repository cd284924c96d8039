"""A user ecosystem written from the checklist of docs/ecosystem-reference.md: the
inventory fixture (steps 1-5: seed, tools, probe, samplers) copied to a folder of the
caller's, then steps 6-9 added as a user would — discovery, a describer (with its
sampler), three fault injectors (a quantity's sign flipped, a row imported twice, a row's
item and quantity swapped; each with its lookup and repair tools), scenarios — and step
10's vandal commands.  ``write_ecosystem(folder, without=...)``
leaves steps out, to measure what each changes (docs/ecosystem-reference.md, Checklist).
"""

from __future__ import annotations

import shutil
from pathlib import Path

INVENTORY = Path(__file__).parents[1] / "fixtures" / "ecosystems" / "inventory"

SKU_TOOL = r"""
  - name: remove_sku
    description: Remove the row of one SKU from a ledger, in place.
    effect: write
    params:
      - {name: ledger, type: file.ledger, description: Ledger file to change.}
      - {name: sku, type: inventory.sku, description: The SKU to remove., sample: {facet: sku, of: ledger}}
    returns: {type: file.ledger, parser: file, from_param: ledger, compare: text}
    command: >-
      awk -F'\t' -v sku={{ sku }} '$1 != sku' {{ ledger }} > {{ ledger }}.tmp
      && mv {{ ledger }}.tmp {{ ledger }}
    intent: the same ledger without the row of SKU {{ sku }} (the other rows in their order)
"""  # noqa: E501
REPAIR_TOOLS = r"""
  - name: find_negative
    description: Print the path of the ledger under stock/ that has a negative quantity (fails when none or several do).
    effect: read
    repair: true
    params: []
    returns: {type: file.ledger, parser: text, label: "the ledger under `stock/` with a negative quantity"}
    command: >-
      found=$(awk -F'\t' '$3 < 0 {print FILENAME; nextfile}' stock/*.tsv);
      [ "$(printf '%s' "$found" | grep -c .)" = 1 ] && echo "$found"
    intent: the path of the ledger under `stock/` with a negative quantity

  - name: unflip_negative
    description: Make every negative quantity of a ledger positive again, in place.
    effect: write
    repair: true
    params:
      - {name: ledger, type: file.ledger, description: Ledger file to repair.}
    returns: {type: file.ledger, parser: file, from_param: ledger, compare: text}
    command: >-
      awk -F'\t' -v OFS='\t' '$3 < 0 {$3 = -$3} {print}' {{ ledger }} > {{ ledger }}.tmp
      && mv {{ ledger }}.tmp {{ ledger }}
    intent: the same ledger with every negative quantity made positive

  - name: find_duplicated
    description: Print the path of the ledger under stock/ that lists a SKU twice (fails when none or several do).
    effect: read
    repair: true
    params: []
    returns: {type: file.ledger, parser: text, label: "the ledger under `stock/` that lists a SKU twice"}
    command: >-
      found=$(awk -F'\t' 'seen[FILENAME, $1]++ {print FILENAME}' stock/*.tsv | LC_ALL=C sort -u);
      [ "$(printf '%s' "$found" | grep -c .)" = 1 ] && echo "$found"
    intent: the path of the ledger under `stock/` that lists a SKU twice

  - name: drop_repeated_rows
    description: Keep only the first row of each SKU in a ledger, in place.
    effect: write
    repair: true
    params:
      - {name: ledger, type: file.ledger, description: Ledger file to repair.}
    returns: {type: file.ledger, parser: file, from_param: ledger, compare: text}
    command: >-
      awk -F'\t' '!seen[$1]++' {{ ledger }} > {{ ledger }}.tmp && mv {{ ledger }}.tmp {{ ledger }}
    intent: the same ledger with only the first row of each SKU

  - name: find_swapped
    description: Print the path of the ledger under stock/ with a row whose quantity is not a number (fails when none or several do).
    effect: read
    repair: true
    params: []
    returns: {type: file.ledger, parser: text, label: "the ledger under `stock/` with a row whose quantity is not a number"}
    command: >-
      found=$(awk -F'\t' '$3 !~ /^-?[0-9]+$/ {print FILENAME; nextfile}' stock/*.tsv);
      [ "$(printf '%s' "$found" | grep -c .)" = 1 ] && echo "$found"
    intent: the path of the ledger under `stock/` with a row whose quantity is not a number

  - name: unswap_rows
    description: Swap the item and quantity back in every row of a ledger whose quantity is not a number, in place.
    effect: write
    repair: true
    params:
      - {name: ledger, type: file.ledger, description: Ledger file to repair.}
    returns: {type: file.ledger, parser: file, from_param: ledger, compare: text}
    command: >-
      awk -F'\t' -v OFS='\t' '$3 !~ /^-?[0-9]+$/ {t = $2; $2 = $3; $3 = t} {print}' {{ ledger }}
      > {{ ledger }}.tmp && mv {{ ledger }}.tmp {{ ledger }}
    intent: the same ledger with each row's item and quantity in their columns
"""  # noqa: E501
STEPS = {
    "discovery": r"""
discovery:
  - name: list_ledgers
    description: List the ledger files, one path per line.
    label: the ledger listing
    before: first
    command: find stock -type f | LC_ALL=C sort
  - name: show_ledger
    description: Show the rows of a ledger (sku, item, qty, tab-separated).
    label: the rows of the ledger
    before: file.ledger
    params:
      - {name: path, description: Ledger to show., from: value}
    command: cat -- {{ path }}
""",
    "describers": r"""
describers:
  - name: find_sku
    description: Print the SKU of every ledger row whose item is exactly the given name.
    type: inventory.sku
    param: {name: item, description: The item's name.}
    facet: item_of
    text: the SKU of the item {{ item }}
    label: the SKUs of items with that name
    command: awk -F'\t' -v item={{ item }} '$2 == item {print $1}' stock/*.tsv | LC_ALL=C sort -u
""",
    "faults": r"""
faults:
  module: faults.py
  injectors:
    - name: flipped_sign
      plant: flip_sign
      repair: [find_negative, unflip_negative]
      symptom: >-
        one of the stock ledgers shows a quantity below zero, which no shelf can hold; the
        count was imported with its sign flipped.
    - name: repeated_row
      plant: repeat_row
      repair: [find_duplicated, drop_repeated_rows]
      symptom: >-
        one item is counted twice in a stock ledger: the import wrote its row a second time,
        so the stock take would double it.
    - name: swapped_columns
      plant: swap_columns
      repair: [find_swapped, unswap_rows]
      symptom: >-
        one row of a stock ledger has its item name where the quantity belongs and its
        quantity where the name belongs, and the ledger's total no longer adds up.
""",
    "scenarios": r"""
scenarios:
  - name: stock_take
    weight: 2
    motivations:
      - The quarterly stock take starts tomorrow, and the ledgers have to match the shelves before it does.
    tools: {quantity_of: 3, restock: 3, remove_sku: 2, low_stock: 1}
    faults: [flipped_sign, repeated_row, swapped_columns]
  - name: reorder
    motivations:
      - Purchasing places its orders on Monday and wants the ledgers current first.
    tools: {low_stock: 2, quantity_of: 2, restock: 2}
""",  # noqa: E501
}
ITEM_OF = '''

def item_of(content: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """The item a SKU names (the describer's distinguishing value), from the probe state."""
    for text in content.get("files", {}).values():
        for line in str(text).splitlines():
            fields = line.split("\\t")
            if len(fields) == 3 and fields[0] == value:
                return fields[1]
    raise LookupError(f"no ledger row has SKU {value!r}")
'''
FAULTS = '''"""Fault injectors: one ledger row imported with its quantity's sign flipped, twice,
or with its item and quantity swapped."""

import random


def _row(files, rng, keep=lambda qty: True):
    """(path, index, lines) of a ledger row whose quantity ``keep`` accepts, drawn by rng."""
    rows = [(path, i) for path in sorted(files) if path.startswith("stock/")
            for i, line in enumerate(files[path].decode().splitlines())
            if keep(int(line.split("\\t")[2]))]
    if not rows:
        raise LookupError("no ledger row to plant the fault in")
    path, i = rng.choice(rows)
    return path, i, files[path].decode().splitlines()


def _with(files, path, lines):
    return {**files, path: ("\\n".join(lines) + "\\n").encode()}


def flip_sign(files: dict[str, bytes], seed: int) -> dict[str, bytes]:
    path, i, lines = _row(files, random.Random(seed), lambda qty: qty > 0)
    sku, item, qty = lines[i].split("\\t")
    lines[i] = f"{sku}\\t{item}\\t-{qty}"
    return _with(files, path, lines)


def repeat_row(files: dict[str, bytes], seed: int) -> dict[str, bytes]:
    path, i, lines = _row(files, random.Random(f"repeat:{seed}"))
    return _with(files, path, lines[:i + 1] + lines[i:])


def swap_columns(files: dict[str, bytes], seed: int) -> dict[str, bytes]:
    path, i, lines = _row(files, random.Random(f"swap:{seed}"))
    sku, item, qty = lines[i].split("\\t")
    lines[i] = f"{sku}\\t{qty}\\t{item}"
    return _with(files, path, lines)
'''
VANDAL = """files:
    compare: text
    strict: true
    vandal:
      - rm -f -- {{ key }}
      - "printf 'SKU-900\\\\tghost\\\\t1\\\\n' >> {{ key }}\""""


def write_ecosystem(folder: Path, without: tuple[str, ...] = ()) -> Path:
    """The ecosystem ``stockroom`` in ``folder`` (a new path), without the steps named in
    ``without`` (keys of :data:`STEPS`); returns ``folder``."""
    shutil.copytree(INVENTORY, folder)
    spec = folder / "ecosystem.yaml"
    text = spec.read_text().replace("name: inventory", "name: stockroom").replace(
        "files: {compare: text, strict: true}", VANDAL)
    text += SKU_TOOL + ("" if "faults" in without else REPAIR_TOOLS)
    for step, block in STEPS.items():
        if step not in without:
            text += block
    if "faults" in without:
        text = text.replace("    faults: [flipped_sign, repeated_row, swapped_columns]\n", "")
    spec.write_text(text)
    with (folder / "samplers.py").open("a") as f:
        f.write(ITEM_OF)
    if "faults" not in without:
        (folder / "faults.py").write_text(FAULTS)
    return folder
