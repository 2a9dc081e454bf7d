"""Path maps: a path of this machine in an endpoint host's terms, and back."""

from __future__ import annotations

import pytest

from workers.executors.remote import EndpointHost, NotShared, PathMap
from workers.executors.websocket import EndpointsAddress

POSIX = PathMap("/mnt/nas", "/srv/media")
UNC = PathMap("/mnt/nas", "\\\\nas\\media")
DRIVE = PathMap("/mnt/nas", "D:\\media")


@pytest.mark.parametrize(
    ("mapping", "local", "remote"),
    [
        (POSIX, "/mnt/nas/a/b c.mkv", "/srv/media/a/b c.mkv"),
        (POSIX, "/mnt/nas", "/srv/media"),
        (POSIX, "/mnt/nas/x/../y.mkv", "/srv/media/y.mkv"),
        (UNC, "/mnt/nas/talks/one.mkv", "\\\\nas\\media\\talks\\one.mkv"),
        (DRIVE, "/mnt/nas/one.mkv", "D:\\media\\one.mkv"),
    ],
)
def test_there_and_back(mapping: PathMap, local: str, remote: str) -> None:
    assert mapping.to_remote(local) == remote
    assert mapping.to_local(remote) == local.replace("/x/../", "/")


@pytest.mark.parametrize(
    "outside", ["/mnt/nas2/a.mkv", "/mnt/na", "/mnt/nas/../etc/passwd", "/home/u/a.mkv", "/"]
)
def test_a_path_outside_the_folder_is_not_mapped(outside: str) -> None:
    assert POSIX.to_remote(outside) is None


def test_windows_paths_back_without_case() -> None:
    assert UNC.to_local("\\\\NAS\\Media\\Talks\\One.mkv") == "/mnt/nas/Talks/One.mkv"
    assert DRIVE.to_local("d:\\media\\x.wav") == "/mnt/nas/x.wav"
    assert DRIVE.to_local("E:\\media\\x.wav") is None
    assert POSIX.to_local("/srv/media-old/x") is None


def host(**more: object) -> EndpointHost:
    address = EndpointsAddress("gpu.lan", 8765, "t")
    return EndpointHost("gpu-box", address, frozenset({"gpu"}), (POSIX,), **more)  # type: ignore[arg-type]


def test_params_go_in_the_hosts_terms_and_results_come_back() -> None:
    params = {
        "input": "/mnt/nas/a.wav",
        "output": "/mnt/nas/lib/a.json",
        "models_dir": "/home/u/.local/share/fredica/models",
        "language": "/mnt/nas/not-a-path-key",
        "resume": {"segments": [{"text": "hi"}], "parts": ["/mnt/nas/lib/a.part1"]},
    }
    keys = ("input", "output", "models_dir")
    sent = host().params_for(params, keys)
    assert sent["input"] == "/srv/media/a.wav" and sent["output"] == "/srv/media/lib/a.json"
    assert "models_dir" not in sent  # not shared, and the host names none: its embedded model
    assert sent["language"] == params["language"]  # not a path param: left alone
    assert sent["resume"]["parts"] == ["/srv/media/lib/a.part1"]
    assert host(models_dir="/opt/models").params_for(params, keys)["models_dir"] == "/opt/models"
    back = host().back({"outputs": ["/srv/media/lib/a.json", "/elsewhere/x"], "n": 3})
    assert back == {"outputs": ["/mnt/nas/lib/a.json", "/elsewhere/x"], "n": 3}


def test_a_file_no_map_covers_is_refused_naming_what_the_host_sees() -> None:
    with pytest.raises(NotShared) as refused:
        host().params_for({"input": "/home/u/Videos/a.mkv"}, ("input",))
    message = str(refused.value)
    assert "/home/u/Videos/a.mkv" in message and "gpu-box" in message and "/mnt/nas" in message


def test_a_hosts_token_is_never_in_its_repr() -> None:
    shown = repr(EndpointHost("gpu-box", EndpointsAddress("gpu.lan", 8765, "s3cret"), frozenset()))
    assert "s3cret" not in shown and "gpu.lan" in shown
