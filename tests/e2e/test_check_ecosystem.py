"""``taskfactory check-ecosystem``: the built-ins and the well-formed fixtures pass (conformance
suite, short plan, small real run on Docker); a copy of the inventory fixture with one
planted fault each fails with one FAIL line naming the fault and its section of
docs/ecosystem-reference.md, and so does the archive fixture (an alternative that writes
other bytes).  The ``faults`` and ``unruly`` fixtures are broken on purpose for the repair
and bounds tests (tools that fail, a seed that hangs): they are not expected to pass."""

import shutil
from pathlib import Path

import pytest

from tests.support.checklist_ecosystem import FAULTS, REPAIR_TOOLS, STEPS

INVENTORY = Path("tests/fixtures/ecosystems/inventory")
REFERENCE = "docs/ecosystem-reference.md#"

NOT_DETERMINISTIC = '''
import time as _time

_generate = generate


def generate(seed):
    files = _generate(seed)
    first = sorted(files)[0]
    files[first] += f"SKU-999\\tghost\\t{_time.time_ns() % 997}\\n".encode()
    return files
'''
LAX_PROBE = '''import json, os

state = {}
for root, dirs, files in os.walk("."):
    dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
    for name in files:
        path = os.path.relpath(os.path.join(root, name), ".")
        if os.path.isfile(path) and not os.path.islink(path):
            state[path] = "present"
print(json.dumps({"files": state}, sort_keys=True, separators=(",", ":")))
'''
NO_PLANT = '''
def flip_sign(files, seed):
    return dict(files)
'''


def _seed(folder: Path) -> None:
    with (folder / "seed.py").open("a") as f:
        f.write(NOT_DETERMINISTIC)


def _probe(folder: Path) -> None:
    (folder / "probe.py").write_text(LAX_PROBE)
    spec = folder / "ecosystem.yaml"
    spec.write_text(spec.read_text().replace('probe: "@files"', "probe: probe.py").replace(
        "files: {compare: text, strict: true}",
        "files: {compare: text, strict: true, vandal: [\"printf 'x\\\\n' >> {{ key }}\"]}"))


def _sampler(folder: Path) -> None:
    with (folder / "samplers.py").open("a") as f:
        f.write("\n\ndef sku(content, rng, **_):\n    return 'SKU-999'\n")


def _injector(folder: Path) -> None:
    (folder / "faults.py").write_text(FAULTS + NO_PLANT)  # flip_sign redefined: no plant
    with (folder / "ecosystem.yaml").open("a") as f:
        f.write(REPAIR_TOOLS + STEPS["faults"])


PLANTED = {"seed": (_seed, "seed: not deterministic", "1-seed"),
           "probe": (_probe, "probe strictness: section files: the probe does not see",
                     "10-shared-and-scratch-sections"),
           "sampler": (_sampler, "samplers: sku returns 'SKU-999', which is not in",
                       "4-samplers"),
           "injector": (_injector, "fault injectors: flipped_sign: does not plant",
                        "8-faults")}


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict[str, Path]:
    """A copy of the inventory fixture per planted fault, outside the repository."""
    root = tmp_path_factory.mktemp("planted")
    folders = {}
    for name, (plant, _, _) in PLANTED.items():
        folders[name] = root / f"inventory-{name}"
        shutil.copytree(INVENTORY, folders[name])
        plant(folders[name])
    return folders


def _fails(proc) -> list[str]:
    return [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]


@pytest.mark.docker
@pytest.mark.parametrize("fault", sorted(PLANTED))
def test_a_planted_fault_is_one_line_naming_it_and_its_section(cli, planted, fault):
    proc = cli("check-ecosystem", planted[fault], "--backend", "docker")
    _, expected, section = PLANTED[fault]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = _fails(proc)
    assert line.startswith(f"FAIL {expected}") and line.endswith(f"{REFERENCE}{section})"), line


@pytest.mark.docker
def test_an_alternative_that_writes_other_bytes_fails(cli):
    proc = cli("check-ecosystem", "tests/fixtures/ecosystems/archive", "--backend", "docker")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = _fails(proc)
    assert line.startswith("FAIL alternatives: compress's alternative") and \
        line.endswith(f"{REFERENCE}5-alternatives)"), line


@pytest.mark.docker
@pytest.mark.parametrize("ecosystem", ["files", "sql", "git", "service", str(INVENTORY)])
def test_the_builtins_and_the_fixture_pass(cli, ecosystem):
    proc = cli("check-ecosystem", ecosystem, "--backend", "docker", "--tasks", 4)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not _fails(proc) and "passes: it makes valid tasks" in proc.stdout
    assert "trial run: " in proc.stdout and " 0/4 accepted" not in proc.stdout
