"""Removing a check run's containers tolerates a removal already under way.

An interrupted ``check-harbor`` removes the run's containers while a worker may be closing
its own; the engine then answers 409 "removal ... is already in progress" for that one.
The race cannot be produced on demand against a real engine, so a stand-in client gives
the engine's answers here (the same ``docker.errors`` the SDK raises).
"""

import docker.errors
import pytest
import requests

from environments.docker.harbor_container import remove_labelled


def _api_error(status: int, message: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(message, response=response, explanation=message)


class _Api:
    def __init__(self, errors: dict[str, Exception]) -> None:
        self.errors, self.removed = errors, []

    def containers(self, **_: object) -> list[dict]:
        return [{"Id": "a"}, {"Id": "b"}, {"Id": "c"}]

    def remove_container(self, cid: str, **_: object) -> None:
        if cid in self.errors:
            raise self.errors[cid]
        self.removed.append(cid)


class _Client:
    def __init__(self, errors: dict[str, Exception]) -> None:
        self.api = _Api(errors)


def test_a_container_gone_or_being_removed_counts_as_removed():
    client = _Client({"a": _api_error(409, "removal of container a is already in progress"),
                      "b": docker.errors.NotFound("No such container: b")})
    assert remove_labelled(client, "run") == 3
    assert client.api.removed == ["c"]


def test_any_other_conflict_is_raised():
    client = _Client({"b": _api_error(409, "container b is paused")})
    with pytest.raises(docker.errors.APIError):
        remove_labelled(client, "run")
