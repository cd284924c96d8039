"""The dataset card: ``<data>/README.md`` with Hugging Face YAML and PNG plots.

The YAML ``configs`` block has one config per table (``data_files`` globs over its
shards), so ``datasets.load_dataset(<folder>, "tasks")`` and the Hub viewer read the
folder as it is.  The body has the counts, a provenance summary of the runs, the plots
(``plots/*.png``) and the :mod:`tasks.dataset.report.stats` report.  Every file is written
atomically,
the README last; the caller holds the dataset lock.
"""

from __future__ import annotations

import io
from collections.abc import Collection
from pathlib import Path
from typing import Any

import duckdb

from schemas.records import TABLES
from tasks.dataset.report.stats import md_table, report
from tasks.dataset.store.paths import atomic_write, real_folder

PLOTS = "plots"
_YAML_TABLE_ORDER = ["trajectories", *[t for t in TABLES if t != "trajectories"]]
WHEN_FILLED = {"rollouts"}
"""Tables a config is listed for only once they hold rows (``taskfactory solve`` writes
them; a config whose files do not exist fails to load)."""


def front_matter(filled: Collection[str] = ()) -> str:
    """The YAML block; ``filled``: the tables that hold rows."""
    lines = ["---", "pretty_name: taskfactory tasks and trajectories",
             "task_categories: [text-generation]",
             "tags: [agent, tool-calling, terminal, synthetic, execution-verified]",
             "configs:"]
    for table in _YAML_TABLE_ORDER:
        if table in WHEN_FILLED and table not in filled:
            continue
        lines.append(f"- config_name: {table}")
        if table == "trajectories":
            lines.append("  default: true")
        lines.append(f'  data_files: [{{split: train, path: "{table}/*.parquet"}}]')
    return "\n".join([*lines, "---"])


def _plot(values: list[tuple[Any, Any]], title: str, xlabel: str, ylabel: str,
          hist: bool = False) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4), dpi=100)
    if hist:
        ax.hist([v for v, _ in values], bins=30, color="#4c72b0")
    else:
        ax.bar([str(k) for k, _ in values], [v for _, v in values], color="#4c72b0")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def plots(con: duckdb.DuckDBPyConnection) -> dict[str, bytes]:
    """PNG bytes per file name for the main distributions (empty tables give no plot)."""
    from tasks.dataset.report.stats import TRAJECTORY_TOKENS
    from tasks.dataset.runs import SETTLED_ATTEMPTS

    q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    specs: dict[str, tuple[list[tuple[Any, Any]], str, str, str, bool]] = {
        "depth.png": (q("select depth, count(*) from tasks group by 1 order by 1"),
                      "Tasks by workflow depth", "depth", "tasks", False),
        "steps.png": (q("select n_steps, count(*) from tasks group by 1 order by 1"),
                      "Steps per task", "steps", "tasks", False),
        "yield.png": (q("select ecosystem, round(100 * avg((status = 'accepted')::int), 1) "
                        f"from {SETTLED_ATTEMPTS} where status <> 'errored' "
                        "group by 1 order by 1"),
                      "Yield per ecosystem", "ecosystem", "accepted %", False),
        "tokens.png": (q(f"select tokens, 1 from ({TRAJECTORY_TOKENS})"),
                       "Tokens per trajectory (chars / 4)", "tokens", "trajectories", True),
    }
    return {name: _plot(*spec) for name, spec in specs.items() if spec[0]}


def card(con: duckdb.DuckDBPyConnection, plot_names: list[str], report_md: str) -> str:
    """The README text; ``report_md`` is :func:`tasks.dataset.report.stats.report` of the same
    ``con``."""
    counts = [(t, (con.execute(f"select count(*) from {t}").fetchone() or (0,))[0])
              for t in TABLES]
    runs = con.execute("""
        select run_id, status, provenance.seed as seed, generator_version, config_hash,
               accepted, candidates, resumes, left(finished_at::varchar, 19) as finished
        from runs order by started_at""").fetchall()
    sources = con.execute("""
        select ecosystem, string_agg(distinct coalesce(provenance.image_id, '(local)'), ', ')
                   as images,
               string_agg(distinct provenance.template_hash, ', ') as templates,
               coalesce(string_agg(distinct provenance.llm_model, ', '), '(none)') as llm,
               string_agg(distinct provenance.generator_version, ', ') as generators
        from attempts where provenance is not null group by 1 order by 1""").fetchall()
    images = "\n".join(f"![{n}]({PLOTS}/{n})" for n in plot_names)
    return "\n\n".join([
        front_matter({t for t, n in counts if n}),
        "# taskfactory dataset",
        "Executable agent tasks, each verified by running it (the verifier fails on the "
        "untouched environment and passes after the reference solution), and SFT "
        "trajectories rendered from the executed trace. Every row has a `provenance` "
        "struct: run, Prefect flow run, generator version, config hash, seed, image, "
        "template hash, LLM, creation time.",
        "## Tables\n\n" + md_table(["table", "rows"], counts),
        "## Runs\n\n" + md_table(["run", "status", "seed", "generator", "config hash",
                                  "accepted", "candidates", "resumes", "finished (UTC)"],
                                 runs),
        "## Provenance per ecosystem\n\n" + md_table(
            ["ecosystem", "sandbox images", "template hash", "LLM", "generator"], sources),
        "## Plots\n\n" + (images or "(no data yet)"),
        report_md.replace("\n## ", "\n### ").replace("## ", "### ", 1)
    ]) + "\n"


def write_card(data_dir: Path, con: duckdb.DuckDBPyConnection,
               report_md: str | None = None) -> Path:
    """(Re)write the plots and ``README.md`` of ``data_dir``; returns the README path.
    ``report_md``: the report of ``con`` when the caller has it already (it reads the
    whole dataset)."""
    folder = real_folder(data_dir, PLOTS, create=True)
    assert folder is not None
    images = plots(con)
    for name, png in images.items():
        atomic_write(folder / name, png)
    path = data_dir / "README.md"
    md = report(con) if report_md is None else report_md
    atomic_write(path, card(con, sorted(images), md).encode())
    return path
