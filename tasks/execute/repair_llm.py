"""Optional LLM repair: propose one structured fix for a failed workflow step.

Deterministic repairs run first; this is asked only when they give up and an LLM is
configured.  The proposal is validated against the request before it is returned, so the
caller can apply it mechanically.  Nothing here raises for LLM trouble: ``None`` means
"no usable proposal -- fall back to deterministic handling".

A proposal that parses but fails these checks is counted on the client
(``client.stats.rejected``, via :meth:`LLMClient.record_rejected`).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, Field

from tasks.core.llm import LLMClient, LLMError

log = logging.getLogger(__name__)

PURPOSE = "repair"
MAX_OUTPUT_CHARS = 2000  # stderr/stdout tail sent to the model

SYSTEM_PROMPT = """\
You repair one failed step of a command-line tool workflow. You get the tool's JSON-schema
definition, the arguments it was called with, the rendered command, its exit code, the tail
of stderr/stdout, a failure category, the allowed values per argument when known
("candidates") and the names of type-compatible replacement tools ("alternatives").
Propose exactly one action:
- "rebind": change one argument; set "param" to an existing argument name and "value" to the
  new value (from "candidates" when a list is given for that param).
- "substitute": use another tool; set "tool" to one name from "alternatives".
- "truncate": end the workflow before this step.
- "give_up": nothing sensible fixes it.
Add a one-sentence "rationale"."""


class RepairProposal(BaseModel, extra="forbid"):
    action: Literal["rebind", "substitute", "truncate", "give_up"]
    param: str | None = None  # rebind: which argument to change
    value: str | None = None  # rebind: the new value
    tool: str | None = None  # substitute: name of a replacement tool
    rationale: str = ""


class RepairRequest(BaseModel):
    tool: dict[str, Any]  # the failing tool's JSON-schema function definition
    args: dict[str, str]
    command: str
    exit_code: int
    stderr: str
    stdout: str
    category: str
    candidates: dict[str, list[str]] = Field(default_factory=dict)  # allowed values per param
    alternatives: list[str] = Field(default_factory=list)  # type-compatible tool names


def _tool_function(tool: dict[str, Any]) -> dict[str, Any]:
    """Accept both ``{"type": "function", "function": {...}}`` and the bare function dict."""
    fn = tool.get("function")
    return fn if isinstance(fn, dict) else tool


def tool_params(tool: dict[str, Any]) -> set[str]:
    props = (_tool_function(tool).get("parameters") or {}).get("properties") or {}
    return set(props) if isinstance(props, dict) else set()


def build_messages(request: RepairRequest) -> list[dict]:
    tail = {
        "stderr": request.stderr[-MAX_OUTPUT_CHARS:],
        "stdout": request.stdout[-MAX_OUTPUT_CHARS:],
    }
    payload = request.model_copy(update=tail).model_dump_json()
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": payload},
    ]


def check_proposal(proposal: RepairProposal, request: RepairRequest) -> str | None:
    """Why ``proposal`` cannot be applied to ``request``; ``None`` when it can.

    rebind: ``param`` is one of the call's args or the tool's declared parameters, ``value``
    is non-empty and differs from the current value, and lies in ``candidates[param]`` when
    that list is non-empty.  substitute: ``tool`` is in ``alternatives`` and is not the
    failing tool.  truncate and give_up are always applicable.
    """
    if proposal.action == "rebind":
        param, value = proposal.param, proposal.value
        if not param or param not in set(request.args) | tool_params(request.tool):
            return f"rebind names unknown param {param!r}"
        if value is None or not value.strip():
            return f"rebind of {param!r} has an empty value"
        if request.args.get(param) == value:
            return f"rebind of {param!r} keeps the failing value"
        allowed = request.candidates.get(param)
        if allowed and value not in allowed:
            return f"rebind value {value!r} is not a candidate for {param!r}"
    elif proposal.action == "substitute":
        if not proposal.tool or proposal.tool not in request.alternatives:
            return f"substitute names unknown tool {proposal.tool!r}"
        if proposal.tool == _tool_function(request.tool).get("name"):
            return "substitute names the failing tool itself"
    return None


def propose_repair(client: LLMClient, request: RepairRequest) -> RepairProposal | None:
    """Ask the LLM for one fix; return it only if it is applicable to ``request``."""
    try:
        proposal = client.complete_json(build_messages(request), RepairProposal, purpose=PURPOSE)
    except LLMError as e:
        log.info("llm repair unavailable: %s", e)
        return None
    problem = check_proposal(proposal, request)
    if problem is not None:
        client.record_rejected(PURPOSE)
        log.info("llm repair proposal rejected: %s", problem)
        return None
    return proposal
