"""The local backend: a temp dir on the host per sandbox, commands as subprocesses
(weaker isolation than docker; see :mod:`environments.local.backend`)."""
