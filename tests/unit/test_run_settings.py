"""Run settings: candidates split between ecosystems, and ecosystems a backend cannot run."""

import pytest
from pydantic import ValidationError

from flows.settings import RunSettings


def test_default_is_every_builtin_and_stack_and_shares_add_up():
    s = RunSettings(tasks=10)
    assert s.ecosystems == ["files", "git", "service", "sql", "files+git+sql"]
    assert [len(s.indices(i)) for i in range(5)] == [2, 1, 2, 2, 3]
    even = RunSettings(tasks=10, ecosystems=["files", "git", "service", "sql"])
    assert [len(even.indices(i)) for i in range(4)] == [3, 3, 2, 2]


def test_an_ecosystem_named_twice_is_refused():
    with pytest.raises(ValidationError, match="named twice"):
        RunSettings(ecosystems=["files", "files"])


def test_docker_only_ecosystems_are_left_out_on_local_with_a_warning():
    warnings: list[str] = []
    local = RunSettings(tasks=9).runnable_on("local", warnings.append)
    assert local.ecosystems == ["files", "git", "sql", "files+git+sql"]
    assert local.backend == "local"
    assert warnings == ["ecosystem service needs the docker backend; left out on local"]
    with pytest.raises(ValueError, match="none of the ecosystems"):
        RunSettings(ecosystems=["service"]).runnable_on("local", warnings.append)


def test_plan_run_interleaves_ecosystems_with_unique_indices():
    from flows.factory import plan_run

    candidates, _ = plan_run(RunSettings(tasks=7, ecosystems=["files", "sql", "git"]))
    assert [c.ecosystem for c in candidates] == ["files", "sql", "git"] * 2 + ["files"]
    assert [c.index for c in candidates] == list(range(7))
    assert len({c.candidate_id for c in candidates}) == 7


def test_planned_candidates_decode_to_the_planned_objects_and_skip_held_ids():
    from flows.factory import ecosystem
    from flows.run.planned import PlannedCandidates
    from tasks.plan.planner import plan_candidates

    originals, _ = plan_candidates(ecosystem("sql"), 6, run_seed=3)
    plan = PlannedCandidates(originals)
    assert len(plan) == 6 and list(plan) == originals
    held = {originals[1].candidate_id, originals[4].candidate_id, "not-in-this-plan"}
    rest = plan.without(held)
    assert list(rest) == [c for i, c in enumerate(originals) if i not in (1, 4)]
    assert len(plan) == 6  # the original plan is unchanged


def test_requiring_observation_and_strict_are_part_of_the_config_hash():
    from tasks.dataset.provenance import Built, Planned, config_hash

    def chash(settings: RunSettings) -> str:
        return config_hash(Built({"files": "d"}, {"files": None}, "docker"),
                           Planned(settings.seed, settings.depth_weights),
                           settings.candidate(), (None, None), "p")

    default, required = RunSettings(), RunSettings(require_observation=True)
    strict = RunSettings(strict=True)
    assert default.require_observation is False and default.strict is False
    assert chash(default) != chash(required) and chash(required) == chash(required)
    assert len({chash(default), chash(required), chash(strict)}) == 3
