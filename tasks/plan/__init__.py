"""Planning: what each candidate is, before anything runs (pure and seeded).

- ``mix``: the run's mix — each candidate's kind, planted fault and scenario;
- ``planner``: seeded workflow graphs whose every input is satisfiable by construction,
  and the candidates of a run (:func:`~tasks.plan.planner.plan_candidates`);
- ``shapes``: :class:`~tasks.plan.shapes.GraphBuilder`, which grows one graph of a shape
  and assigns tools by semantic type;
- ``tree``: the lookup tree, a graph whose looked-up values meet in one piece of work;
- ``lookups``: the looked-up values of a graph, and how many an ecosystem's tools allow;
- ``layout``: the seeded paths a reconstruct program is written against;
- ``diversity``: how diverse a planned batch is (``taskfactory plan``);
- ``tiers``: what each ``--difficulty`` asks of the planner, the seed and the gate.

Imports nothing else of ``tasks/``.
"""

__all__ = ["diversity", "layout", "lookups", "mix", "planner", "shapes", "tiers", "tree"]
