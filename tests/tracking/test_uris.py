"""Which store is used, credentials never shown, and a quick one-line failure when a server is not there."""

from __future__ import annotations

import time

import pytest

from mlgrpo.errors import UserError
from mlgrpo.tracking.server import free_port
from mlgrpo.tracking.uris import mask_text, mask_uri, resolve_tracking_uri, sqlite_path


def test_precedence_cli_then_yaml_then_env_then_default(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://env:5000")
    assert resolve_tracking_uri("http://cli:1", "http://yaml:2") == "http://cli:1"
    assert resolve_tracking_uri(None, "http://yaml:2") == "http://yaml:2"
    assert resolve_tracking_uri("  ", None) == "http://env:5000"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert resolve_tracking_uri(None, None) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"


def test_relative_sqlite_paths_become_absolute(monkeypatch, tmp_path):
    # Workers and `mlgrpo ui` may start in other folders; the file must be the same.
    monkeypatch.chdir(tmp_path)
    assert resolve_tracking_uri("sqlite:///runs/m.db", None) == f"sqlite:///{tmp_path.resolve()}/runs/m.db"
    assert resolve_tracking_uri("sqlite:////abs/m.db", None) == "sqlite:////abs/m.db"
    assert sqlite_path("sqlite:////abs/m.db").as_posix() == "/abs/m.db"
    assert sqlite_path("http://h:1") is None


@pytest.mark.parametrize("uri, shown", [
    ("https://alice:s3cret@mlflow.example.com:443/", "https://alice:***@mlflow.example.com:443/"),
    ("https://ghp_T0KEN@host:5000", "https://***@host:5000"),
    ("http://host:5000/?token=abc&user=bob&api_key=k1", "http://host:5000/?token=***&user=bob&api_key=***"),
    ("postgresql://mlflow:pw%40x@db:5432/mlflow", "postgresql://mlflow:***@db:5432/mlflow"),
    ("sqlite:////home/me/mlflow.db", "sqlite:////home/me/mlflow.db"),
    ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
])
def test_mask_uri(uri, shown):
    assert mask_uri(uri) == shown


def test_mask_text_masks_every_uri_in_a_message():
    message = "API request to https://u:hunter2@h/api failed; retry http://x?sig=abc later"
    masked = mask_text(message)
    assert "hunter2" not in masked and "abc" not in masked
    assert masked == "API request to https://u:***@h/api failed; retry http://x?sig=*** later"


def test_unreachable_server_fails_fast_in_one_line_without_credentials(tmp_path):
    from mlgrpo.tracking import Tracker

    port = free_port()  # nothing listens on it
    started = time.monotonic()
    with pytest.raises(UserError) as caught:
        Tracker.open(f"http://alice:s3cret@127.0.0.1:{port}", "x", outbox_dir=tmp_path)
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert elapsed < 8, elapsed
    assert "\n" not in message
    assert "s3cret" not in message and f"alice:***@127.0.0.1:{port}" in message
    assert "did not answer" in message and "--tracking-uri" in message


def test_a_store_that_cannot_be_created_is_one_line(tmp_path):
    from mlgrpo.tracking import Tracker

    with pytest.raises(UserError, match="cannot open the MLflow store at sqlite:////proc/no/mlflow.db"):
        Tracker.open("sqlite:////proc/no/mlflow.db", "x", outbox_dir=tmp_path)


def test_a_folder_store_is_refused_unless_mlflow_is_told_to_allow_it(monkeypatch):
    import pytest

    from mlgrpo.errors import UserError
    from mlgrpo.tracking.uris import check_store_kind, resolve_tracking_uri

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for folder in ("./mlruns", "/tmp/mlruns", "file:///tmp/mlruns"):
        with pytest.raises(UserError, match="folder store"):
            resolve_tracking_uri(folder, None)
    assert check_store_kind("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"
    assert check_store_kind("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    assert resolve_tracking_uri("/tmp/mlruns", None) == "/tmp/mlruns"
