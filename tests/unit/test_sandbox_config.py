"""Backend configs and the registry of backends by name (no Docker needed)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from pydantic import ValidationError

from environments.docker import config as docker_config
from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from environments.registry import (
    UnknownBackendError,
    backend_names,
    config_class,
    make_provider,
    parse_backend,
    resolve_backend,
)

FIXTURE = "tests.fixtures.backends.labelled_local:LabelledLocalConfig"


def test_parsing_by_type() -> None:
    d = parse_backend({"type": "docker", "memory_mb": 1024, "cpus": 2})
    assert isinstance(d, DockerConfig) and d.memory_mb == 1024 and d.cpus == 2.0
    assert d.image == "taskfactory/base:bookworm" and d.network_mode == "none"
    assert d.cap_drop == ["ALL"] and d.security_opt == ["no-new-privileges"]
    assert (d.pids_limit, d.user, d.workdir, d.init, d.output_cap_bytes) == (
        256, "1000:1000", "/workspace", True, 8 * 2**20)  # fmt: skip
    loc = parse_backend({"type": "local", "cpu_seconds": 5})
    assert isinstance(loc, LocalConfig) and loc.cpu_seconds == 5
    assert (loc.memory_mb, loc.max_file_mb, loc.output_cap_bytes) == (1024, 64, 8 * 2**20)
    assert parse_backend(d.model_dump()) == d  # round trip
    assert parse_backend(loc.model_dump()) == loc


def test_docker_verbs_go_through_the_runner_unless_configured() -> None:
    assert DockerConfig().exec_via == "runner"
    d = parse_backend({"type": "docker", "exec_via": "docker-exec"})
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
        {"type": "docker", "pids_limit": 0},
        {"type": "local", "output_cap_bytes": -1},
        {"type": "docker", "exec_via": "ssh"},
        {"type": "local", "exec_via": "runner"},  # docker-only field on local
    ],
)
def test_invalid_configs_are_rejected(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        parse_backend(data)


@pytest.mark.parametrize("data", [{"type": "podman"}, {"memory_mb": 1}])
def test_configs_of_no_known_backend_are_rejected(data: dict[str, object]) -> None:
    with pytest.raises(UnknownBackendError):
        parse_backend(data)


def test_extra_fields_forbidden_on_models() -> None:
    with pytest.raises(ValidationError):
        DockerConfig(unknown=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        LocalConfig(unknown=1)  # type: ignore[call-arg]


def test_resolve_backend_names() -> None:
    assert isinstance(resolve_backend("local"), LocalConfig)
    assert isinstance(resolve_backend(" Docker "), DockerConfig)
    assert {"auto", "docker", "local"} <= set(backend_names())


def test_an_unknown_name_is_one_line_naming_the_known_ones_and_how_to_add_one() -> None:
    with pytest.raises(UnknownBackendError) as info:
        resolve_backend("bogus")
    message = str(info.value)
    assert "\n" not in message and "'bogus'" in message
    assert all(name in message for name in backend_names())
    assert "auto, docker" in message and "package.module:ConfigClass" in message
    for path, why in [("no.such.module:Config", "ModuleNotFoundError"),
                      (FIXTURE.replace("LabelledLocalConfig", "Missing"), "AttributeError"),
                      (FIXTURE.replace("LabelledLocalConfig", "NotABackend"),
                       "not a subclass of BackendConfig")]:
        with pytest.raises(UnknownBackendError, match=why) as info:
            resolve_backend(path)
        assert "\n" not in str(info.value)


def test_a_third_party_backend_by_import_path() -> None:
    cls = config_class(FIXTURE)
    assert cls.__name__ == "LabelledLocalConfig" and issubclass(cls, LocalConfig)
    assert "labelled-local" in backend_names() and config_class("labelled-local") is cls
    config = resolve_backend(FIXTURE)
    assert parse_backend({"type": FIXTURE, "cpu_seconds": 3}) == cls(cpu_seconds=3)
    provider = make_provider(config, "unit-registry")
    try:
        with provider.sandbox(labels={"t": "1"}) as sb:
            assert sb.exec(["echo", "hi"]).stdout == "hi\n"
            assert sb.labels == {"t": "1", "backend": "labelled-local"}  # type: ignore[attr-defined]
    finally:
        provider.close()
    assert type(provider).opened >= 1  # type: ignore[attr-defined]


def test_resolve_auto_falls_back_to_local_loudly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # point the docker SDK at a socket nobody listens on: a real "no daemon" situation
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/taskfactory-test.sock")
    assert docker_config.docker_available(timeout=1) is False
    assert DockerConfig().available(timeout=1) is False and LocalConfig().available()
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
    code = ("import sys; from environments.registry import resolve_backend;"
            "resolve_backend('docker'); resolve_backend('local');"
            "print('docker' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
