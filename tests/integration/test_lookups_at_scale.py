"""Every lookup of every built-in ecosystem, on the hard tier's seeded state (ten times
the entries, with distractors), in a real container: it prints one value, and every
alternative prints the same one.  Its typed inputs take the first seeded value that fits
and its sampled ones what their sampler draws; a lookup that takes anything else, or whose
ambiguity check says the state has no single answer, is left out.  At least two run per
ecosystem."""

from __future__ import annotations

import os
import random

import pytest

from environments.docker.config import DockerConfig
from environments.ecosystems import Ecosystem, builtin_names, load_ecosystem
from flows.run.providers import close_run, provider_for
from schemas.ecosystem import ToolSpec, type_satisfies
from tasks.core.commands import render_command, render_shell
from tasks.execute.realize import LiveEnvironment
from tasks.plan.tiers import HARD_SCALE

pytestmark = pytest.mark.docker

RUN = f"itest-lookups-at-scale-{os.getpid()}"
SEED = 26
"""A seed whose open tickets, as the service lists them, are more than one argument may
hold (128 KiB): a lookup that passes them as one fails with "Argument list too long"."""


def _args(eco: Ecosystem, tool: ToolSpec, env: LiveEnvironment, state: dict[str, str]
          ) -> dict[str, str] | None:
    """Each typed input bound to the first seeded value of its type, then each sampled
    one drawn by its sampler as the planner draws it; None when an input is fresh or of a
    type no seeded value has, or its sampler finds no value here."""
    args: dict[str, str] = {}
    for p in sorted(tool.params, key=lambda p: p.sample is not None):
        if p.sample is not None:
            content = env.files[args[p.sample.of]] if p.sample.of else env.before
            try:
                args[p.name] = eco.sample(p.sample.facet, content, random.Random(0),
                                          **{w: args[w] for w in p.sample.with_})
            except (LookupError, ValueError, IndexError):
                return None
            continue
        fits = sorted(v for v, t in state.items() if type_satisfies(t, p.type)) \
            if p.typed and p.fresh is None else []
        if not fits:
            return None
        args[p.name] = fits[0]
    return args


@pytest.mark.parametrize("name", builtin_names())
def test_every_lookup_agrees_with_its_alternatives_at_the_hard_scale(name):
    eco = load_ecosystem(name)
    state = {p: t for p in eco.state_paths(SEED, HARD_SCALE) if (t := eco.state_type(p))}
    config = DockerConfig().for_ecosystem(eco)
    ran = []
    try:
        with LiveEnvironment(eco, SEED, lambda packages: provider_for(config, RUN).sandbox(),
                             scale=HARD_SCALE) as env:
            sb = env.sandbox
            for tool in (t for t in eco.spec.tools if t.observes_value and not t.repair):
                args = _args(eco, tool, env, state)
                if args is None:
                    continue
                if tool.ambiguity_check and sb.exec(
                        ["bash", "-c", render_shell(tool.ambiguity_check, args)],
                        timeout=60).exit_code != 0:
                    continue
                done = sb.exec(["bash", "-c", render_command(tool, args)], timeout=60)
                assert done.exit_code == 0, (tool.name, done.stderr[-500:])
                value = done.stdout.strip()
                assert value and "\n" not in value, (tool.name, done.stdout[-500:])
                for alternative in tool.alternatives:
                    again = sb.exec(["bash", "-c", render_shell(alternative, args)], timeout=60)
                    assert (again.exit_code, again.stdout.strip()) == (0, value), (
                        tool.name, alternative, again.stderr[-500:])
                ran.append(tool.name)
    finally:
        close_run(RUN)
    assert len(ran) >= 2, ran
