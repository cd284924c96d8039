"""The CLI's bad-input error, in its own module so that command modules and ``flows.cli``
(also when run as ``python -m flows.cli``) share one class."""


class UsageError(Exception):
    """Bad input: reported as one line ``taskfactory: error: ...``, exit code 2."""
