"""Run an ecosystem's probe on a host folder, as the sandbox runs it (``python3 -``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from environments.ecosystems import Ecosystem


def run_probe(eco: Ecosystem, cwd: Path) -> dict[str, Any]:
    """The parsed state ``eco``'s probe prints from ``cwd``; raises when the probe fails."""
    done = subprocess.run([sys.executable, "-"], input=eco.probe_source, cwd=cwd,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))
