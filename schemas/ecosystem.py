"""Ecosystem specs: the tools an agent may call, their semantic types, seed and probe.

An ecosystem folder holds ``ecosystem.yaml`` (validated by :class:`EcosystemSpec`) plus
the code it names: a seed module, a sampler module and a probe script.

Semantic types are dotted names.  A value of type ``U`` satisfies a parameter of type
``T`` when ``U == T`` or ``U`` starts with ``T + "."`` — so a ``file.text.csv`` may be
passed where a ``file.text`` is expected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ParserName = Literal["int", "number", "text", "lines", "json", "file"]
Effect = Literal["read", "write"]
Compare = Literal["exact", "text", "lines_unordered", "csv", "csv_unordered", "json_text",
                  "rows_unordered"]
"""How a verifier compares a probe entry with its expected value (see tasks/templates)."""
Backend = Literal["docker", "local"]
Draws = Literal["member", "new", "lowercase", "comma_joined", "release_tag", "derived"]
"""What a sampler returns: ``member`` (default), a value that stands as it is in what it
was given (the file bound to ``of``, or the probe state); ``new``, a value it invents (a
new title, an amount); a value of its input in a derived form: ``lowercase`` (a word,
lowercased), ``comma_joined`` (names joined by commas), ``release_tag`` (``v<version>``
of a ``Release <version>`` subject), or ``derived`` (any other form — a status class
``2xx`` of ``200``, an ISO date of a timestamp — that the check cannot test: only its
shape and determinism are checked)."""

SCALAR_TYPES = ("int", "number", "text")
VALUE_PARSERS = ("int", "text")
"""Parsers whose output is one value, the kind a read tool's typed output can pass on."""


def type_satisfies(value_type: str, param_type: str) -> bool:
    """True when a value of ``value_type`` may bind a parameter of ``param_type``."""
    return value_type == param_type or value_type.startswith(param_type + ".")


def binds(param: Param, value_type: str, compare: str | None = None) -> bool:
    """True when ``param`` may take a value of ``value_type``: a state value
    (``compare`` None) or a step's output that its verifier compares under ``compare``.
    A parameter that reads exact bytes takes no output compared loosely."""
    return type_satisfies(value_type, param.type) and not (
        param.exact_bytes and compare not in (None, "exact"))


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def _all_backends() -> list[Backend]:
    return ["docker", "local"]


def _unique(items: list[N], what: str) -> list[N]:
    names = [i.name for i in items]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"duplicate {what} names: {dupes}")
    return items


NEW_NAME_NOTE = "(A new name: when the task does not give it, choose one.)"
"""Ends the description of a parameter that names an entry the call creates; grounding
reads it: such a value is the caller's choice, visible from the call that names it on."""


def function_schema(name: str, description: str,
                    params: Sequence[Param] | Sequence[DiscoveryParam] | Sequence[DescriberParam],
                    new_names: Sequence[str] = ()) -> dict[str, Any]:
    """An OpenAI / Hugging Face function definition; every parameter is required, and
    those in ``new_names`` end with ``NEW_NAME_NOTE``."""
    props = {p.name: {"type": p.json_type, "description": p.description + (
        f" {NEW_NAME_NOTE}" if p.name in new_names else "")} for p in params}
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props,
                       "required": [p.name for p in params]}}}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sample(_Strict):
    """A literal drawn at execution time from what is really in the sandbox.

    ``facet`` names a sampler function of the ecosystem.  With ``of``, the sampler gets
    the bytes of the file bound to that parameter; without it, the current probe state
    (parsed JSON).  ``with_`` passes other already-resolved arguments along by name.
    """

    facet: str
    of: str | None = None
    with_: list[str] = Field(default_factory=list, alias="with")
    draws: Draws = "member"
    """What the value is, for ``check-ecosystem`` (:data:`Draws`)."""


class Param(_Strict):
    """One input of a tool.

    Exactly one of three binding sources applies:
    - ``type`` only: an upstream output or a state value of a compatible type;
    - ``sample``: a literal sampled from the state at execution time;
    - ``fresh``: a new name the planner invents from this template, whose ``{n}`` becomes
      "" or "_2", "_3"... to keep names unique (e.g. ``out/matching_lines{n}.txt``).
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    type: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
    description: str
    sample: Sample | None = None
    fresh: str | None = Field(None, pattern=r"\{n\}")
    json_type: Literal["string", "integer", "number"] = "string"
    exact_bytes: bool = False
    """The tool depends on the exact bytes of what this parameter names (a checksum, an
    archive).  It never takes a step's output that the verifier compares loosely (``text``,
    ``csv``, ``json_text``...): a correct solution may write that output in other bytes,
    and the value this tool prints would then pin the reference's bytes.  Seeded values and
    outputs compared ``exact`` are fine."""

    @model_validator(mode="after")
    def _one_source(self) -> Param:
        if self.sample and self.fresh:
            raise ValueError("a parameter is either sampled or fresh, not both")
        return self

    @property
    def typed(self) -> bool:
        """Bound by type: to an upstream output or a state value."""
        return self.sample is None and self.fresh is None


class Returns(_Strict):
    """What a tool produces: parsed stdout, or (``from_param``) the thing a param names.

    For write tools, ``from_param`` names the probe entry the tool changes (a file path,
    a table, a branch...), and ``compare`` how a verifier compares that entry; a write's
    output is that entry (the argument read with ``parser``), whatever it prints.
    """

    type: str
    parser: ParserName
    description: str = ""
    from_param: str | None = None
    compare: Compare | None = None
    label: str | None = None
    """jinja2 label of the output in instructions (default: the ``from_param`` value)."""
    sample: str | None = None
    """A lookup's sampler (``facet(content, rng)`` over the probe state) of other seeded
    values of its type: the open-loop control's guess for the value it printed."""
    alias: bool = False
    """The output only points at what one of the inputs names (a new tag on a commit is
    that commit): a step taking it would take that input through a detour, made only to
    point at what it points at, so the planner binds no step to it."""
    settles: list[str] = []
    """For a tool that creates a record or a fresh entry: fields whose default the task
    wants as created (a new ticket is open; a new branch's ``tip`` is where the task put
    it).  A later step of the task that changes one of them is purposeless, as one that
    changes a field the step set from its arguments is (a ticket created and then resolved
    at once); fields left out (an assignee) may be set by a later step."""
    changes: list[str] = []
    """For a write that changes an entry in place: the fields it may change (a rewind
    changes a branch's ``tip``).  The planner binds it to no entry the task created whose
    fields include one of them (the creating step's parameters and ``settles``, then the
    fields earlier writes changed)."""


class ToolSpec(_Strict):
    """A typed tool: a shell command template that really runs in the sandbox.

    ``command`` is a jinja2 template; every ``{{ expr }}`` is shell-quoted on render.
    ``intent`` is a jinja2 noun phrase describing the result, used in instructions.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    params: list[Param]
    returns: Returns
    command: str = Field(min_length=1)
    effect: Effect
    intent: str = Field(min_length=1)
    creates: bool = False
    """The entry named by ``returns.from_param`` is new (e.g. a sampled next id), so the
    tool creates rather than changes in place, like a tool with a ``fresh`` output."""
    ambiguity_check: str | None = None
    """Optional command (jinja2, like ``command``) run after a successful call; a non-zero
    exit means the result depends on a choice the instruction cannot fix (e.g. a tie at
    the cut-off of a top-N), and the candidate is rejected as ``ambiguous``."""
    timeout_s: float = Field(20.0, gt=0, le=600)
    """Wall-clock limit of one call; the whole process tree is killed past it."""
    related_inputs: bool = False
    """Its typed inputs only make sense when they derive from one upstream step (e.g. the
    lines two files have in common): the planner uses it only to close a diamond."""
    repair: bool = False
    """The tool undoes a planted fault (its sampled inputs find the defect in the probe
    state): the planner uses it only where a fault injector names it, at the start of a
    fix task, never in a build task."""
    alternatives: list[str] = Field(default_factory=list)
    """Other commands with the same effect (jinja2 over the same parameters, like
    ``command``): another route a correct solver may take — Python instead of awk, the
    ``sqlite3`` module instead of the CLI, plumbing instead of porcelain, urllib instead of
    curl.  A read tool's alternative prints the same value, a write tool's makes the same
    change.  The gate's alternative control runs the solution with them
    (``tasks/gate/alternative.py``) and requires it to pass."""

    @field_validator("params")
    @classmethod
    def _unique_params(cls, params: list[Param]) -> list[Param]:
        return _unique(params, "parameter")

    @model_validator(mode="after")
    def _references_exist(self) -> ToolSpec:
        names = {p.name for p in self.params}
        for p in self.params:
            if p.sample and p.sample.of is not None and p.sample.of not in names:
                raise ValueError(f"param {p.name!r} samples from unknown param {p.sample.of!r}")
            for other in p.sample.with_ if p.sample else []:
                if other not in names:
                    raise ValueError(f"param {p.name!r} samples with unknown param {other!r}")
        if self.returns.from_param and self.returns.from_param not in names:
            raise ValueError(f"returns.from_param names unknown param {self.returns.from_param!r}")
        if self.effect == "write" and not self.returns.from_param:
            raise ValueError("a 'write' tool must return the file it writes (returns.from_param)")
        return self

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def names_new_entry(self, param: str) -> bool:
        """The argument names an entry the call creates: a ``fresh`` name, or the id a
        ``creates`` tool gives its new entry (a solver may choose these itself)."""
        return self.param(param).fresh is not None or (
            self.creates and param == self.returns.from_param)

    @property
    def observes_value(self) -> bool:
        """A read whose stdout is one value of a non-scalar type (a ticket id, a commit, a
        path...): a later step may take what it really printed as a typed input."""
        root = self.returns.type.split(".")[0]
        return (self.effect == "read" and self.returns.parser in VALUE_PARSERS
                and root not in SCALAR_TYPES)

    def json_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI / Hugging Face function definition."""
        return function_schema(self.name, self.description, self.params,
                               [p.name for p in self.params if self.names_new_entry(p.name)])


class CodeRef(_Strict):
    module: str = Field(pattern=r"^[A-Za-z0-9_]+\.py$")
    function: str = "generate"


class ImageSpec(_Strict):
    """The ecosystem's image: ``FROM`` the local base tag, plus Debian packages and the
    ``support`` files of the ecosystem folder, copied to /opt/taskfactory/<ecosystem>/."""

    packages: list[str] = Field(default_factory=list)
    support: list[str] = Field(default_factory=list)
    provides: dict[str, str] = Field(default_factory=dict)
    """Command -> Debian package, for commands a tool may call that the image lacks; the
    environment repair installs it on demand.  An unlisted missing command is tried as a
    package of the same name (``jq``, ``bc``, ``tree``...)."""


class ServiceSpec(_Strict):
    """A server the environment runs: ``start`` is launched detached after setup, as
    ``user``, then ``ready`` is retried until it exits 0 (within ``ready_timeout_s``)."""

    start: str
    ready: str
    ready_timeout_s: float = Field(20.0, gt=0)
    user: str = Field("1001:1001", pattern=r"^[0-9]+:[0-9]+$")
    """The uid:gid the server runs as, where the sandbox has a second user: never root and
    never the agent's (1000), so the agent can neither stop nor replace it, and the
    verifier, which stops every process of the agent's user, leaves it running."""
    writes: list[str] = Field(default_factory=list)
    """Folders of the workspace the server writes (its state): opened to every user
    (mode 0777) before it starts, so the server's user can write them."""

    @field_validator("user")
    @classmethod
    def _not_root_nor_agent(cls, value: str) -> str:
        if value.split(":")[0] in ("0", "1000"):
            raise ValueError("a service runs as its own user: not root (0), not the "
                             "agent's (1000)")
        return value


class ProbeSection(_Strict):
    """How verifier checks treat one top-level section of the probe output.

    ``strict``: every changed entry must be the declared output of a write step (else the
    candidate is rejected as an unexpected change).  ``compare``: the default comparison.
    """

    compare: Compare = "exact"
    strict: bool = True
    checked: bool = True
    """False for derived state that other sections already pin (git commits, whose content
    ids the branch and tag entries carry): its changes get no checks of their own."""
    preserved: bool = True
    """Every seeded entry the task does not change must be unchanged at the end (one
    ``unchanged`` check per section).  False opts the section out; instructions then do not
    promise that existing things stay as they are."""
    distinct: bool = False
    """An entry a step writes here must differ (under ``compare``) from the step's inputs and
    from the task's other outputs: a copy of what exists is no work (``tasks/execute/purpose.py``).
    Leave it off where an equal entry is the point (a branch made at another's commit)."""
    vandal: list[str] = Field(default_factory=list)
    """Commands (jinja2, ``{{ key }}`` is the entry's key, shell-quoted) that each make one
    change the probe sees to an existing entry: delete it, append to it, or alter it.  The
    gate's vandal control runs one after the reference solution (``tasks/gate/vandal.py``)."""
    shared: bool = False
    """Shared state (a service's records, the shop's tables, a repository's branches and
    tags): an entry a task did not ask for may not be added, and the verifier fails one
    (an ``only`` check).  Otherwise the section is scratch: new entries are the solver's
    own business (work files)."""
    extra: list[str] = Field(default_factory=list)
    """For a shared section: commands that each add one entry nobody asked for (the gate's
    near-miss control runs one after the reference solution, ``tasks/gate/near_miss.py``)."""

    @model_validator(mode="after")
    def _shared_has_extra(self) -> ProbeSection:
        if self.shared and not self.extra:
            raise ValueError("a shared section needs 'extra': a command that adds one entry "
                             "nobody asked for, which the near-miss control runs")
        return self


class StateType(_Strict):
    """Files of the seeded state matching ``glob`` carry semantic ``type``."""

    glob: str
    type: str


ProbeRef = Annotated[str, Field(
    pattern=r"^([A-Za-z0-9_]+\.py|@[a-z][a-z0-9_-]*(/[A-Za-z0-9_]+\.py)?)$")]
"""One part of a probe script (see ``EcosystemSpec.probe``)."""


class DiscoveryParam(_Strict):
    """One input of a discovery tool, taken from the step that triggers it: the
    triggering value itself (``from: value``) or the step's argument whose parameter has
    a semantic type satisfying ``from`` (e.g. ``sql.db``)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    from_: str = Field(alias="from", pattern=r"^(value|[a-z][a-z0-9_]*(\.[a-z0-9_]+)*)$")
    json_type: Literal["string", "integer", "number"] = "string"


class Discovery(_Strict):
    """A read-only inspection an agent makes before it first needs what it reveals (the
    API document before the first call, a table's schema before the first query on it).

    ``before`` is ``first`` (once, before the first step) or a semantic type: the
    discovery runs before the first step with an argument of a parameter of that type,
    once per distinct rendered command.  ``command`` (jinja2, shell-quoted like a tool's)
    really runs in the sandbox in the state that step sees; it must not change anything.
    In the ``function`` view the discovery is a tool of its own (``name``,
    ``description``, ``params``); in the ``terminal`` view it is its command.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    before: str = Field(pattern=r"^(first|[a-z][a-z0-9_]*(\.[a-z0-9_]+)*)$")
    params: list[DiscoveryParam] = Field(default_factory=list)
    command: str = Field(min_length=1)
    label: str = Field(min_length=1)
    """A noun phrase for what it shows, used in reasoning (``the API document``)."""

    @model_validator(mode="after")
    def _sources(self) -> Discovery:
        _unique(self.params, "parameter")
        if self.before == "first" and any(p.from_ == "value" for p in self.params):
            raise ValueError("a discovery run 'first' has no triggering value")
        return self

    def json_schema(self) -> dict[str, Any]:
        """The discovery as a function definition."""
        return function_schema(self.name, self.description, self.params)


class DescriberParam(_Strict):
    """The one input of a describer: the distinguishing value its ``facet`` draws."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    json_type: Literal["string", "integer", "number"] = "string"


class Describer(_Strict):
    """Names a seeded entry by description instead of by its literal (an id, a hash, a
    row key): "the ticket titled `Login fails`" instead of ticket `12`.

    For a literal of a parameter whose type satisfies ``type``, the sampler ``facet``
    (samplers module; called with the initial probe state and ``value=<literal>``) draws
    the distinguishing value for ``param``; ``text`` (jinja2) is the description and
    ``command`` (jinja2, shell-quoted) prints the literals that fit it, one per line.
    The command runs in the sandbox in the initial state, and the description replaces
    the literal in a goal-level instruction only when it prints exactly that literal
    (unique, not ambiguous).  Trajectories then show the command, as a tool of its own
    (``name``, ``description``, ``param``) in the ``function`` view, before the first
    use of the literal."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    type: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
    param: DescriberParam
    facet: str
    text: str = Field(min_length=1)
    command: str = Field(min_length=1)
    label: str = Field(min_length=1)
    """A noun phrase for what the command shows, used in reasoning."""

    @property
    def params(self) -> list[DescriberParam]:
        return [self.param]

    def json_schema(self) -> dict[str, Any]:
        """The describer's command as a function definition."""
        return function_schema(self.name, self.description, self.params)


class FaultSpec(_Strict):
    """A fault injector: ``plant`` (a function of the faults module,
    ``plant(files, seed) -> files``) puts one realistic defect into the seed files before
    setup, and the tools of ``repair`` (run in order, as a fix task's first steps) remove
    it.  ``symptom`` is the defect as a user would report it, in the domain's words and
    never the fix; a fix task's instruction carries it.  ``report`` names the reads that
    may follow the repair as the task's one report on what the fix left: those that answer
    a question the symptom raises (the rows left after duplicates went, the total they no
    longer inflate), not any read that happens to take the repaired entry; None lets any
    such read follow, an empty list none."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    plant: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    repair: list[str] = Field(min_length=1)
    symptom: str = Field(min_length=1)
    report: list[str] | None = None


class Faults(_Strict):
    """The ecosystem's fault injectors and the module that holds their ``plant``
    functions."""

    module: str = Field(pattern=r"^[A-Za-z0-9_]+\.py$")
    injectors: list[FaultSpec] = Field(min_length=1)

    @field_validator("injectors")
    @classmethod
    def _unique_injectors(cls, injectors: list[FaultSpec]) -> list[FaultSpec]:
        return _unique(injectors, "fault injector")


class Motivation(_Strict):
    """One line saying why a scenario's work is done, in the goal's own terms and never
    naming a command, and the tools that make a graph that work: a graph fits the line
    when it uses one of ``needs`` (any graph when empty).  "Sales needs to know who its
    most loyal customers are" promises a customer looked up; an export of all delivered
    orders does not keep it.  Written in YAML as the bare line when it needs nothing."""

    text: str = Field(min_length=1, pattern=r"^[^\n]+$")
    needs: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bare_line(cls, value: object) -> object:
        return {"text": value} if isinstance(value, str) else value

    def fits(self, tools: set[str]) -> bool:
        """Whether a graph using ``tools`` does the work this line promises."""
        return not self.needs or bool(tools & set(self.needs))


class Scenario(_Strict):
    """A named piece of work people do in the ecosystem (preparing a release, a monthly
    sales report): a weighted recipe over its tools that gives a graph a purpose.

    A graph planned in the scenario grows only with ``tools`` (tool name -> relative
    weight; a fix task's repair steps come from its fault), and a build task's instruction
    opens with one of the ``motivations`` the graph fits (:class:`Motivation`): the planner
    plans no build graph in the scenario that fits none.  ``faults`` are the injectors
    whose fix tasks belong to the scenario (their symptom is the opening); ``weight`` is
    how often the planner draws it relative to the others."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    motivations: list[Motivation] = Field(min_length=1)
    tools: dict[str, Annotated[float, Field(gt=0)]] = Field(min_length=2)
    faults: list[str] = Field(default_factory=list)
    weight: float = Field(1.0, gt=0)
    max_writes: int | None = Field(None, ge=1)
    """At most this many write steps in a build graph of the scenario (None: no bound).  A
    hotfix is a branch or two, not four branches stacked on each other."""
    state: list[str] | None = None
    """The state types its graphs take their inputs from, each a type or a narrower one
    (the notes under ``docs/``, not every text file); None: any the ecosystem has."""

    def fitting(self, tools: set[str]) -> list[int]:
        """Indices of the motivations a graph using ``tools`` fits."""
        return [i for i, m in enumerate(self.motivations) if m.fits(tools)]


class EcosystemSpec(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*(\+[a-z][a-z0-9_-]*)*$")
    """The ecosystem's name; a stack's is its members' joined by ``+`` (a folder's spec
    may not use ``+``)."""
    description: str
    context: str = ""
    """What a solver is told about the environment in every instruction (e.g. where a
    service listens and how its API looks)."""
    shared_note: str = ""
    """One plain sentence every instruction says when the ecosystem has shared probe
    sections: what may not be added beyond what is asked (``ProbeSection.shared``)."""
    version: str = "1"
    seed: CodeRef
    samplers: CodeRef | None = None
    shortcuts: str | None = Field(None, pattern=r"^[A-Za-z0-9_]+\.py$")
    """Module with ``empty(key, expected)`` and ``fill(key, expected, literals)``: shell
    commands that fake an output of a non-file probe section, for the gate's shortcut
    controls (see tasks/gate/shortcuts.py)."""
    probe: ProbeRef | list[ProbeRef] = Field(
        description="stdlib probe script, or the parts one is made of, in order")
    """A part is a ``.py`` file of the folder, ``@<built-in>`` (that ecosystem's whole
    probe) or ``@<built-in>/<file>.py`` (one file of its folder).  The parts are joined
    into one script, so a later part may use what an earlier one defines."""
    probe_sections: dict[str, ProbeSection] = Field(default_factory=dict)
    setup: str | None = None
    """Shell command run once in the workdir after the seed files are written."""
    service: ServiceSpec | None = None
    backends: list[Backend] = Field(default_factory=_all_backends, min_length=1)
    image: ImageSpec = Field(default_factory=ImageSpec)
    answer_file: str = "answer.txt"
    owns: list[str] = Field(default_factory=list)
    """Workspace paths (fnmatch globs, ``.git/*``) whose state this ecosystem's own probe
    sections report: in a stack, the other members' sections leave them out."""
    state_types: list[StateType] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(min_length=1)
    discovery: list[Discovery] = Field(default_factory=list)
    """Inspections that trajectories show before the step that needs them (see
    :class:`Discovery`); their names are unique and differ from the tools'."""
    describers: list[Describer] = Field(default_factory=list)
    """Descriptions that may replace literals in goal-level instructions (see
    :class:`Describer`); names unique among discoveries and tools."""
    faults: Faults | None = None
    """Fault injectors: the defects fix tasks start from (see :class:`FaultSpec`)."""
    scenarios: list[Scenario] = Field(default_factory=list)
    """The work the ecosystem's tasks are part of (see :class:`Scenario`); graphs outside
    any scenario stay possible (the run's ``off_scenario`` share)."""

    @model_validator(mode="after")
    def _shared_is_said(self) -> EcosystemSpec:
        shared = sorted(n for n, s in self.probe_sections.items() if s.shared)
        if shared and not self.shared_note.strip():
            raise ValueError(f"probe sections {shared} are shared: 'shared_note' must say, in "
                             "one sentence, what an instruction may not have added to them")
        return self

    @model_validator(mode="after")
    def _scenarios_use_known_parts(self) -> EcosystemSpec:
        _unique(self.scenarios, "scenario")
        faults = {f.name for f in self.faults.injectors} if self.faults else set()
        tools = {t.name: t for t in self.tools}
        for s in self.scenarios:
            unknown = sorted(set(s.tools) - set(tools))
            if unknown:
                raise ValueError(f"scenario {s.name!r} names unknown tools {unknown}")
            repairs = sorted(n for n in s.tools if tools[n].repair)
            if repairs:
                raise ValueError(f"scenario {s.name!r} names repair tools {repairs}; a fix "
                                 "task takes them from its fault (list the fault under "
                                 "'faults' instead)")
            unknown = sorted(set(s.faults) - faults)
            if unknown:
                raise ValueError(f"scenario {s.name!r} names unknown fault injectors {unknown}")
            unknown = sorted({n for m in s.motivations for n in m.needs} - set(s.tools))
            if unknown:
                raise ValueError(f"scenario {s.name!r} has motivations that need tools outside "
                                 f"its 'tools': {unknown}; add them there or drop them from "
                                 "'needs'")
        return self

    def scenario(self, name: str) -> Scenario:
        for s in self.scenarios:
            if s.name == name:
                return s
        raise KeyError(f"ecosystem {self.name!r} has no scenario {name!r}")

    @model_validator(mode="after")
    def _repairs_exist(self) -> EcosystemSpec:
        names = {t.name for t in self.tools}
        named: set[str] = set()
        for f in self.faults.injectors if self.faults else []:
            unknown = [r for r in f.repair if r not in names]
            if unknown:
                raise ValueError(f"fault {f.name!r} repairs with unknown tools {unknown}")
            writes = [r for r in f.report or [] if r not in names
                      or self.tool(r).effect == "write" or self.tool(r).repair]
            if writes:
                raise ValueError(f"fault {f.name!r} reports with {writes}, which are no "
                                 "read tools of the ecosystem; name reads in "
                                 "faults.injectors[].report")
            named.update(f.repair)
        idle = sorted(t.name for t in self.tools if t.repair and t.name not in named)
        if idle:
            raise ValueError(f"repair tools {idle} are in no fault's repair list; name them in "
                             "one (faults.injectors[].repair) or drop 'repair: true'")
        return self

    def fault(self, name: str) -> FaultSpec:
        for f in self.faults.injectors if self.faults else []:
            if f.name == name:
                return f
        raise KeyError(f"ecosystem {self.name!r} has no fault injector {name!r}")

    @model_validator(mode="after")
    def _discovery_names(self) -> EcosystemSpec:
        shown: list[Discovery | Describer] = [*self.discovery, *self.describers]
        _unique(shown, "discovery or describer")
        clash = sorted({d.name for d in shown} & {t.name for t in self.tools})
        if clash:
            raise ValueError(f"discovery or describer names clash with tool names: {clash}")
        return self

    @field_validator("tools")
    @classmethod
    def _unique_tools(cls, tools: list[ToolSpec]) -> list[ToolSpec]:
        return _unique(tools, "tool")

    @property
    def preserves_existing(self) -> bool:
        """No checked probe section opts out of ``preserved``: every seeded entry a task
        leaves alone is checked, so an instruction may promise that it stays as it is."""
        return all(s.preserved for s in self.probe_sections.values() if s.checked)

    def discovery_tool(self, name: str) -> Discovery | Describer:
        """The discovery or describer called ``name`` (both show as calls before a step)."""
        shown: list[Discovery | Describer] = [*self.discovery, *self.describers]
        for d in shown:
            if d.name == name:
                return d
        raise KeyError(f"ecosystem {self.name!r} has no discovery {name!r}")

    def tool(self, name: str) -> ToolSpec:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(f"ecosystem {self.name!r} has no tool {name!r}")


class StackSpec(_Strict):
    """A stack file: ecosystems that share one workspace
    (:mod:`environments.ecosystems.stack`), and the work that needs them together.

    ``tools`` are tools whose commands use more than one member (a query's export
    committed on a branch); ``scenarios`` replace the members' own, so the stack's tasks
    are the jobs that cross them (a stack without any keeps its members' scenarios and
    fault injectors' places); ``context``, when given, replaces the members' contexts."""

    members: list[str] = Field(min_length=2)
    """Built-in ecosystem names, or folders (relative to the stack file's folder)."""
    description: str = ""
    context: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    scenarios: list[Scenario] = Field(default_factory=list)
