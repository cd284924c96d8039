"""``--difficulty``: what each tier sets in the run's settings, the plan and its identity,
and the one-line refusals (a kind the tier does not make; an ecosystem whose seed cannot
grow).  The hard tier's planning and seeds are tested in test_plan_lookups and
test_seed_scale; its tasks, on the engine, in tests/e2e/test_hard_tier.py."""

import pytest
from pydantic import ValidationError

from environments.ecosystems import EcosystemError, load_ecosystem
from flows.settings import RunSettings
from tasks.dataset.provenance import Built, Planned, config_hash
from tasks.plan.planner import DEFAULT_DEPTH_WEIGHTS, plan_candidates
from tasks.plan.tiers import HARD_SCALE, TIER_RULES, scale_of
from tests.unit.test_cli_errors import INVENTORY, run_cli


def test_each_tier_sets_its_depths_and_hard_its_kinds():
    assert RunSettings().difficulty == "medium"
    assert RunSettings().depth_weights == RunSettings(difficulty="medium").depth_weights \
        == DEFAULT_DEPTH_WEIGHTS
    easy, hard = RunSettings(difficulty="easy"), RunSettings(difficulty="hard")
    assert max(easy.depth_weights) == 3 and easy.kinds == RunSettings().kinds
    assert min(hard.depth_weights) == 7 and hard.kinds == {"build": 1.0}
    assert hard.where_possible == []
    # depths the user gives win over the tier's
    assert RunSettings(difficulty="hard", depth_weights={8: 1}).depth_weights == {8: 1}


def test_the_hard_tier_refuses_a_kind_it_does_not_make():
    with pytest.raises(ValidationError, match="--difficulty hard makes build tasks only, not "
                                              "fix"):
        RunSettings(difficulty="hard", kinds={"build": 1, "fix": 1})
    assert RunSettings(difficulty="hard", kinds={"build": 2}).kinds == {"build": 2.0}


def test_medium_keeps_the_config_hash_of_runs_before_tiers():
    built = Built({"files": "d"}, {"files": "i"}, "docker")
    before = config_hash(built, Planned(41, DEFAULT_DEPTH_WEIGHTS), RunSettings().candidate(),
                         (None, None), "p")
    again = config_hash(built, Planned(41, DEFAULT_DEPTH_WEIGHTS, difficulty=None),
                        RunSettings().candidate(), (None, None), "p")
    hard = config_hash(built, Planned(41, DEFAULT_DEPTH_WEIGHTS, difficulty="hard"),
                       RunSettings().candidate(), (None, None), "p")
    assert before == again != hard


def test_candidates_carry_their_tier_and_medium_plans_as_before():
    eco = load_ecosystem("files")
    plain, _ = plan_candidates(eco, 30, 41)
    medium, _ = plan_candidates(eco, 30, 41, tier="medium")
    assert [c.candidate_id for c in plain] == [c.candidate_id for c in medium]
    assert {c.tier for c in medium} == {"medium"}
    easy, _ = plan_candidates(eco, 30, 41, tier="easy")
    assert {c.tier for c in easy} == {"easy"}
    assert max(c.graph.depth for c in easy if c.graph.fault is None) <= 3
    assert not {c.candidate_id for c in easy} & {c.candidate_id for c in medium}


def test_scale_follows_the_tier():
    assert scale_of(None) == scale_of("medium") == scale_of("easy") == 1
    assert scale_of("hard") == HARD_SCALE == TIER_RULES["hard"].scale >= 10


def test_a_seed_without_scale_cannot_make_the_hard_tier(tmp_path):
    """The fixture's generate(seed) takes no scale: the ecosystem says which file to change,
    and run and plan refuse hard in one line before anything runs."""
    eco = load_ecosystem(INVENTORY)
    assert not eco.scales
    assert eco.seed_state(1) == eco.seed_state(1, scale=1)
    with pytest.raises(EcosystemError, match=r"inventory/seed\.py: generate\(seed\) \(or layout\) "
                                             r"takes no 'scale'.*give both a 'scale: int = 1'"):
        eco.seed_state(1, scale=HARD_SCALE)
    for command in (["plan", "--ecosystem", INVENTORY, "--n", "5"],
                    ["run", "--ecosystem", INVENTORY, "--tasks", "2",
                     "--data", str(tmp_path / "d")]):
        proc = run_cli(*command, "--difficulty", "hard")
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "takes no 'scale'" in proc.stderr and "--difficulty hard" in proc.stderr
    assert not (tmp_path / "d").exists()
