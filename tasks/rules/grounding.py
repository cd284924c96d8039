"""Grounding: every value a trajectory uses must be visible to the agent when it is used.

A value is **grounded** at a point of the conversation when it appears

- in the instruction, inside a Markdown code span (the instruction's literals);
- in the JSON schema of the tool being called (an enum value, a documented default);
- or in an earlier tool observation, as written there (the observation text as the
  agent sees it, truncation included).

"Appears" means as a whole token: a value that begins or ends with a letter, digit or
underscore must not continue a longer word there, nor a dotted one (``42`` is not
grounded by ``142`` or ``42.5``, ``a.txt`` not by ``a.txt.bak``).

The check covers the arguments of every assistant tool call — in the ``function`` view
the JSON arguments; in the ``terminal`` view the values substituted into each command,
given as ``call_values`` — except that a command line is not itself a value to look up:
a ``bash`` call (of either view) is checked by every name its command uses that is not
shell syntax, a program or an option (routes, JSON fields, table and column names, paths:
:func:`tasks.rules.shell_names.command_names`), and a file's content written by a
``write_file`` call by the names its lines use (:func:`tasks.rules.shell_names.script_names`;
:func:`checked_values`) —
and the code spans an assistant quotes in its reasoning or final answer, which may only
name what was visible (tool names included).  Only standard-library and schema imports:
the stats command re-checks shards with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache

from schemas.ecosystem import NEW_NAME_NOTE
from schemas.records import Message
from tasks.rules.markdown import code_spans
from tasks.rules.shell_names import command_names, script_names

SHELL_TOOL = "bash"
"""The terminal view's one tool: its calls' commands are checked name by name."""
WRITE_FILE = "write_file"
"""A tool writing a file (``path``, ``content``): the content is checked name by name."""

_WORD = re.compile(r"\w")
_APART = "\x00"
"""Joins the texts a value is looked for in, searched at once: not a word character, so
a token ends at it as at the end of a text, and a value without it cannot span two."""


@lru_cache(maxsize=4096)
def _pattern(value: str) -> re.Pattern[str]:
    left = r"(?<!\w)(?<!\w\.)" if _WORD.match(value[:1]) else ""
    right = r"(?!\w)(?!\.\w)" if _WORD.match(value[-1:]) else ""
    return re.compile(left + re.escape(value) + right)


def appears(value: str, texts: Sequence[str]) -> bool:
    """True when ``value`` occurs as a whole token in one of ``texts`` (see module doc)."""
    if not value:
        return True
    pattern = _pattern(value)
    if _APART in value:
        return any(pattern.search(t) for t in texts)
    return pattern.search(_APART.join(texts)) is not None


def value_text(value: object) -> str:
    """How an argument value is looked up: strings as they are, others as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


class Visible:
    """What the agent has seen so far: instruction literals, tool schemas, observations."""

    def __init__(self, tools: list[dict]) -> None:
        self.schemas = {t["function"]["name"]: json.dumps(t, sort_keys=True) for t in tools}
        self.spans: list[str] = []
        self.observations: list[str] = []
        self.own: list[str] = []
        """Names the agent chose for entries its calls create (see ``new_names``)."""

    def see(self, message: Message) -> None:
        """Take in a user message (its code spans) or a tool message (its text)."""
        if message.role == "user":
            self.spans.extend(code_spans(message.content))
        elif message.role == "tool":
            self.observations.append(message.content)

    def value(self, value: object, tool: str) -> bool:
        """Is an argument value of a call to ``tool`` grounded?"""
        return appears(value_text(value), [*self.spans, self.schemas.get(tool, ""),
                                           *self.observations, *self.own])

    def quote(self, quoted: str) -> bool:
        """May an assistant quote ``quoted`` (in a code span) at this point?"""
        return quoted in self.spans or appears(quoted, [*self.observations, *self.schemas,
                                                        *self.own])

    def first_unseen_quote(self, text: str) -> str | None:
        return next((q for q in code_spans(text) if not self.quote(q)), None)


def checked_values(tool: str, args: dict[str, object]) -> dict[str, object]:
    """The values of a call to ``tool`` with ``args`` that are looked up: every argument
    but a ``bash`` command (checked by its names instead) and a ``write_file`` content,
    which counts by the names its lines use (keys ``content name 1``, ...).  A terminal
    view is checked with these values of the matching function-view call."""
    out = {k: v for k, v in args.items() if not (tool == SHELL_TOOL and k == "command")}
    if tool == WRITE_FILE and "content" in out:
        content = str(out.pop("content"))
        out.update({f"content name {i}": n
                    for i, n in enumerate(script_names(content), start=1)})
    return out


def new_names(messages: Sequence[Message], tools: list[dict]) -> list[list[str]]:
    """Per tool call of a function view, the values it gives parameters whose schema
    says they name a new entry (``NEW_NAME_NOTE``): names the agent may choose."""
    chosen: dict[str, set[str]] = {}
    for t in tools:
        props = t["function"].get("parameters", {}).get("properties", {})
        chosen[t["function"]["name"]] = {name for name, prop in props.items()
                                         if prop.get("description", "").endswith(NEW_NAME_NOTE)}
    return [[value_text(v) for a, v in json.loads(c.function.arguments).items()
             if a in chosen.get(c.function.name, ())]
            for m in messages for c in m.tool_calls or []]


def first_ungrounded(messages: Sequence[Message], tools: list[dict],
                     call_values: Sequence[dict[str, object]] | None = None,
                     chosen: Sequence[Sequence[str]] | None = None) -> str | None:
    """The first value of the conversation that was not visible when used, described in
    one line (message, call and argument named); ``None`` when everything is grounded.

    ``call_values[k]`` replaces the arguments of the k-th tool call (terminal view), and
    ``chosen[k]`` (default: ``new_names`` of this view) are the names that call gives new
    entries: the agent's own choice, visible from the message that makes the call on."""
    seen = Visible(tools)
    chosen = new_names(messages, tools) if chosen is None else chosen
    k = 0
    for turn, m in enumerate(messages):
        if m.role != "assistant":
            seen.see(m)
            continue
        for j in range(len(m.tool_calls or [])):
            seen.own.extend(chosen[k + j] if k + j < len(chosen) else ())
        for text, what in ((m.reasoning_content or "", "reasoning"), (m.content, "answer")):
            quoted = seen.first_unseen_quote(text)
            if quoted is not None:
                return f"message {turn}: the {what} quotes `{quoted}`, which nothing showed"
        for call in m.tool_calls or []:
            problem = _unseen_argument(seen, call.function.name, call.function.arguments,
                                       call_values[k] if call_values is not None else None)
            k += 1
            if problem is not None:
                return f"message {turn}: {problem}"
    return None


def _unseen_argument(seen: Visible, name: str, arguments: str,
                     values: dict[str, object] | None) -> str | None:
    """The first value of one call that is not visible, described; ``values`` replaces
    the call's JSON arguments, and a shell call's command adds the names it uses."""
    pairs = list((values if values is not None
                  else checked_values(name, json.loads(arguments))).items())
    if name == SHELL_TOOL:
        command = str(json.loads(arguments).get("command", ""))
        pairs += [("name", n) for n in command_names(command)]
    for arg, value in pairs:
        if not seen.value(value, name):
            text = value_text(value)
            shown = text if len(text) <= 60 else text[:57] + "..."
            named = arg == "name" or arg.startswith("content name ")
            return (f"{name} {'uses the name ' if named else 'argument ' + arg + '='}"
                    f"{shown!r} appears in neither the instruction, the tool schema nor an "
                    "earlier observation")
    return None
