"""The ``difficulty`` view: pass@1 and pass@k per task and model, from ``rollouts``.

Per (``task_id``, ``model``): ``attempts`` (n, the rows), ``solved`` (c, reward 1), ``k``
(the smallest k a solve of them was asked for, at most n), ``pass_at_1`` = c / n and
``pass_at_k`` = 1 - C(n-c, k) / C(n, k), the unbiased estimator of Chen et al. (2021),
computed through ``lgamma`` and rounded to 9 places (exactly 1 when n - c < k).
"""

from __future__ import annotations

VIEW_SQL = """
CREATE VIEW difficulty AS
SELECT task_id, model, n::INT AS attempts, c::INT AS solved, kk::INT AS k,
       round(c / n, 9) AS pass_at_1,
       CASE WHEN n - c < kk THEN 1.0
            ELSE round(1 - exp(lgamma(n - c + 1) - lgamma(n - c - kk + 1)
                               - lgamma(n + 1) + lgamma(n - kk + 1)), 9) END AS pass_at_k
FROM (SELECT task_id, model, count(*)::DOUBLE AS n, sum((reward = 1)::INT)::DOUBLE AS c,
             least(min(k), count(*))::DOUBLE AS kk
      FROM rollouts GROUP BY task_id, model)
"""
