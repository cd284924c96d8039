"""An ecosystem folder's code runs in worker processes: hangs end in a timeout, errors come
back as one exception type, and a killed worker is replaced."""

from __future__ import annotations

import random
import shutil
import threading
import time
from pathlib import Path

import pytest

from environments.ecosystems import EcosystemError, load_ecosystem
from environments.ecosystems.usercode import UserCodeError, WorkerPool

UNRULY = Path("tests/fixtures/ecosystems/unruly")


def seeds(remainder: int) -> int:
    return next(s for s in range(100, 200) if s % 5 == remainder)


def test_a_hanging_seed_times_out_and_the_next_call_gets_a_fresh_worker(monkeypatch):
    monkeypatch.setenv("TASKFACTORY_SEED_TIMEOUT_S", "1")
    eco = load_ecosystem(str(UNRULY))
    t0 = time.monotonic()
    with pytest.raises(UserCodeError) as caught:
        eco.seed_state(seeds(1))
    assert caught.value.timed_out and "did not return within 1 s" in str(caught.value)
    assert time.monotonic() - t0 < 30  # a correctness bound: the call did end
    assert sorted(eco.seed_state(seeds(0))) == ["notes/n0.txt", "notes/n1.txt", "notes/n2.txt"]


def test_a_raising_seed_names_the_exception_and_the_line():
    eco = load_ecosystem(str(UNRULY))
    with pytest.raises(UserCodeError) as caught:
        eco.seed_state(seeds(2))
    assert not caught.value.timed_out
    assert f"seed.generate({seeds(2)})" in str(caught.value)
    assert "ValueError: no notes for seed" in str(caught.value) and "(seed.py, line" in str(
        caught.value)


def test_a_sampler_that_finds_nothing_still_means_no_value_fits():
    eco = load_ecosystem(str(UNRULY))
    with pytest.raises(LookupError):  # random.choice of an empty list: IndexError
        eco.sample("word", b"", random.Random(1))
    assert eco.sample("word", b"apple\napple\n", random.Random(1)) == "apple"


def test_concurrent_calls_do_not_queue_behind_a_hanging_one(monkeypatch):
    monkeypatch.setenv("TASKFACTORY_SEED_TIMEOUT_S", "5")
    eco = load_ecosystem(str(UNRULY))
    hung = threading.Thread(target=lambda: pytest.raises(UserCodeError, eco.seed_state,
                                                         seeds(1)))
    hung.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    assert eco.seed_state(seeds(0))  # another worker answers meanwhile
    assert time.monotonic() - t0 < 4 and hung.is_alive()
    hung.join()


@pytest.mark.parametrize("module", ["seed.py", "samplers.py"])
def test_a_module_that_raises_on_import_is_one_line_naming_the_file(tmp_path, module):
    eco = tmp_path / "eco"
    shutil.copytree(UNRULY, eco)
    source = (eco / module).read_text()
    (eco / module).write_text("import os\nraise RuntimeError('boom')\n" + source)
    with pytest.raises(EcosystemError) as caught:
        load_ecosystem(str(eco))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{eco / module}: raises on import: RuntimeError: boom")
    assert f"({module}, line 2)" in message


def test_a_module_that_hangs_on_import_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("environments.ecosystems.usercode.IMPORT_TIMEOUT_S", 1.0)
    eco = tmp_path / "eco"
    shutil.copytree(UNRULY, eco)
    (eco / "seed.py").write_text("import time\ntime.sleep(3600)\n")
    with pytest.raises(EcosystemError, match="takes too long to import: did not return"):
        load_ecosystem(str(eco))


def test_a_worker_that_dies_is_an_error_not_a_hang(tmp_path):
    (tmp_path / "m.py").write_text("import os\ndef die():\n    os._exit(3)\n")
    pool = WorkerPool(tmp_path, {"seed": "m.py"})
    assert pool.start() == {"seed": {"die": []}}  # each function with its parameters
    with pytest.raises(UserCodeError, match="worker process died"):
        pool.call("seed", "die", (), {}, 10, "seed.die()")
    pool.close()


def test_an_unbindable_parameter_type_is_refused_when_the_ecosystem_loads(tmp_path):
    eco = tmp_path / "eco"
    shutil.copytree(UNRULY, eco)
    spec = eco / "ecosystem.yaml"
    spec.write_text(spec.read_text().replace("type: file.text.note, description: The note to "
                                             "sort.", "type: file.nosuch, description: x."))
    with pytest.raises(EcosystemError) as caught:
        load_ecosystem(str(eco))
    assert str(caught.value) == (
        f"{spec}: field 'tools.1 (sorted_copy).params.0 (note).type': nothing binds type "
        "'file.nosuch' (no state type or tool return satisfies it); use a type that one "
        "does, or give the parameter a sample or fresh")


@pytest.mark.parametrize("where", ["host", "in-process"])
def test_a_samplers_context_may_use_any_keyword(tmp_path, where):
    from environments.ecosystems.code import load_functions

    (tmp_path / "s.py").write_text("def pick(content, rng, name, role):\n"
                                   "    return f'{name}/{role}'\n")
    functions, shapes = load_functions(tmp_path, {"samplers": "s.py"}, where)
    assert functions["samplers"]["pick"](b"", random.Random(1), name="n", role="r") == "n/r"
    names = [name for name, _, _ in shapes["samplers"]["pick"] or []]
    assert names == ["content", "rng", "name", "role"]


def test_a_sampler_raising_key_error_is_a_bug_not_no_value_fits(tmp_path):
    """Only LookupError, ValueError and IndexError themselves say "no value fits"; a
    KeyError (a subclass) is the sampler's bug: a UserCodeError naming it and its line."""
    eco_dir = tmp_path / "eco"
    shutil.copytree(UNRULY, eco_dir)
    (eco_dir / "samplers.py").write_text(
        "def word(content: bytes, rng) -> str:\n    return {}['first']\n")
    eco = load_ecosystem(str(eco_dir))
    with pytest.raises(UserCodeError) as caught:
        eco.sample("word", b"apple\n", random.Random(1))
    assert "KeyError: 'first'" in str(caught.value) and "(samplers.py, line 2)" in str(
        caught.value)
