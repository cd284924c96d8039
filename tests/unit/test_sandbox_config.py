"""Backend config parsing and backend resolution (no Docker needed)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from pydantic import TypeAdapter, ValidationError

from environments import config
from environments.config import (
    BackendConfig,
    DockerConfig,
    LocalConfig,
    make_provider,
    resolve_backend,
)

ADAPTER: TypeAdapter[DockerConfig | LocalConfig] = TypeAdapter(BackendConfig)


def test_discriminated_parsing() -> None:
    d = ADAPTER.validate_python({"type": "docker", "memory_mb": 1024, "cpus": 2})
    assert isinstance(d, DockerConfig) and d.memory_mb == 1024 and d.cpus == 2.0
    assert d.image == "taskfactory/base:bookworm" and d.network_mode == "none"
    assert d.cap_drop == ["ALL"] and d.security_opt == ["no-new-privileges"]
    assert (d.pids_limit, d.user, d.workdir, d.init, d.output_cap_bytes) == (
        256, "1000:1000", "/workspace", True, 2**20)  # fmt: skip
    loc = ADAPTER.validate_json('{"type": "local", "cpu_seconds": 5}')
    assert isinstance(loc, LocalConfig) and loc.cpu_seconds == 5
    assert (loc.memory_mb, loc.max_file_mb, loc.output_cap_bytes) == (1024, 64, 2**20)
    assert ADAPTER.validate_python(d.model_dump()) == d  # round trip


def test_docker_verbs_go_through_the_runner_unless_configured() -> None:
    assert DockerConfig().exec_via == "runner"
    d = ADAPTER.validate_python({"type": "docker", "exec_via": "docker-exec"})
    assert isinstance(d, DockerConfig) and d.exec_via == "docker-exec"


def test_defaults_are_not_shared() -> None:
    a, b = DockerConfig(), DockerConfig()
    a.cap_drop.append("X")
    assert b.cap_drop == ["ALL"]


@pytest.mark.parametrize(
    "data",
    [
        {"type": "docker", "memroy_mb": 1},  # typo: extra field
        {"type": "local", "image": "x"},  # docker-only field on local
        {"type": "podman"},  # unknown discriminator
        {"memory_mb": 1},  # missing discriminator
        {"type": "docker", "pids_limit": 0},
        {"type": "local", "output_cap_bytes": -1},
        {"type": "docker", "exec_via": "ssh"},
        {"type": "local", "exec_via": "runner"},  # docker-only field on local
    ],
)
def test_invalid_configs_are_rejected(data: dict) -> None:
    with pytest.raises(ValidationError):
        ADAPTER.validate_python(data)


def test_extra_fields_forbidden_on_models() -> None:
    with pytest.raises(ValidationError):
        DockerConfig(unknown=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        LocalConfig(unknown=1)  # type: ignore[call-arg]


def test_resolve_backend_names() -> None:
    assert isinstance(resolve_backend("local"), LocalConfig)
    assert isinstance(resolve_backend("docker"), DockerConfig)
    with pytest.raises(ValueError, match="'bogus'.*docker, local, auto"):
        resolve_backend("bogus")


def test_resolve_auto_falls_back_to_local_loudly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # point the docker SDK at a socket nobody listens on: a real "no daemon" situation
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/taskfactory-test.sock")
    assert config.docker_available(timeout=1) is False
    with caplog.at_level(logging.WARNING):
        cfg = resolve_backend("auto")
    assert isinstance(cfg, LocalConfig)
    assert "no Docker daemon answers; using the local backend" in caplog.text


def test_make_provider_local_and_lazy_docker_import() -> None:
    p = make_provider(LocalConfig(), "unit-config")
    try:
        assert type(p).__name__ == "LocalProvider" and p.run_id == "unit-config"
    finally:
        p.close()
    code = "import sys, environments, environments.config; print('docker' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
