"""The subcommands of ``taskfactory``, which :mod:`flows.cli` assembles into one parser:
parse, call, print.

- ``run``: ``run`` (and ``--resume``), ``serve`` and ``plan``, from their options to checked
  run settings, the run and its report;
- ``solve``, ``atif``, ``harbor``, ``repair``: ``solve`` and ``export preference``,
  ``export``/``import atif``, ``export harbor`` and ``check-harbor``, ``repair`` and
  ``vacuum``;
- ``ecosystem``: ``check-ecosystem``, the conformance suite and a short trial on a folder;
- ``data``: the commands that read a dataset (``query``, ``stats``, ``card``, ``export
  sft``); ``rows_output`` streams query results to stdout;
- ``arguments``, ``usage``: argument types, and the one-line bad-input error (exit 2);
- ``help``: the description, defaults and example of every command, ``--version``, and
  the program's name as hints print it;
- ``api_server``: the temporary Prefect API server of a command, in a session of its own.

Imports the flows (:mod:`flows.factory`, :mod:`flows.solve`) lazily, inside the commands.
"""

__all__ = ["api_server", "arguments", "atif", "data", "ecosystem", "harbor", "help",
           "repair", "rows_output", "run", "solve", "usage"]
