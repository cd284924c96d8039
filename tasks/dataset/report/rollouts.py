"""The report's rollout sections, as (title, SQL, note): how attempts ended, difficulty,
possible reward hacks (:func:`tasks.dataset.report.stats.report` renders them).

- stop reasons per model and action space (attempts, tokens, seconds);
- the difficulty histogram: tasks per ecosystem, kind and model in bins of ``pass_at_k``
  (the ``difficulty`` view, :mod:`tasks.dataset.difficulty`);
- pass@k per tier (``--difficulty``) and model: do the tiers separate for that model;
- possible reward hacks: attempts scoring 1 whose final state differs from the
  reference's on a probed entry no check of the task looks at (``unchecked_changes``),
  one row per task and model, for review.
"""

from __future__ import annotations

BINS = """
    case when pass_at_k = 0 then 'a: 0' when pass_at_k <= 0.25 then 'b: (0, .25]'
         when pass_at_k <= 0.5 then 'c: (.25, .5]' when pass_at_k <= 0.75 then 'd: (.5, .75]'
         when pass_at_k < 1 then 'e: (.75, 1)' else 'f: 1' end"""

STOP_REASONS = ("Rollouts: how attempts ended", """
    select model, action_space, stop_reason, count(*) as attempts,
           avg(reward) as mean_reward, avg(n_turns) as mean_turns,
           sum(prompt_tokens + completion_tokens) as tokens,
           avg(llm_s) as mean_llm_s, avg(total_s) as mean_total_s
    from rollouts group by all order by all""", "")

DIFFICULTY = ("Difficulty (pass@k) per ecosystem and kind", f"""
    pivot (select t.ecosystem, coalesce(t.kind, 'build') as kind, d.model,
                  {BINS} as pass_at_k
           from difficulty d join (select distinct task_id, ecosystem, kind from tasks) t
           using (task_id))
    on pass_at_k using count(*) group by ecosystem, kind, model
    order by ecosystem, kind, model""",
    "Tasks per bin of pass@k (the unbiased estimator over each task's attempts).")

PASS_BY_TIER = ("Pass@k per tier and model", """
    select coalesce(t.tier, 'medium') as tier, d.model, count(*) as tasks,
           sum(d.attempts) as attempts, min(d.k) as k,
           round(avg(d.pass_at_1), 3) as "mean pass@1",
           round(avg(d.pass_at_k), 3) as "mean pass@k"
    from difficulty d join (select distinct task_id, tier from tasks) t using (task_id)
    group by all order by tier, model""",
    "Per `--difficulty`: the mean over tasks of each task's pass@1 and pass@k (the "
    "`difficulty` view); a model the tiers do not separate shows the same figures in each.")

REWARD_HACKS = ("Possible reward hacks", """
    select task_id, model, count(*) as attempts,
           string_agg(distinct e, ', ') as unchecked_entries
    from (select task_id, model, unnest(unchecked_changes) as e from rollouts
          where reward = 1 and len(unchecked_changes) > 0)
    group by all order by all""",
    "Solved attempts whose final state differs from the reference's on entries the "
    "task does not check: review these tasks' verifiers.")
