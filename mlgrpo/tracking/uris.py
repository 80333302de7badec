"""Where runs are stored: choosing the tracking URI, hiding its credentials, and checking that a server answers.

Precedence for the store: the `--tracking-uri` flag, then the experiment YAML's `tracking.uri`, then
MLFLOW_TRACKING_URI, then MLflow's own default, a SQLite file in the working directory (we write the
path out in full so that worker processes started elsewhere, and `mlgrpo ui`, find the same file).
MLflow 3 keeps `./mlruns` as the default where such a folder already holds runs; we do not: a new
mlgrpo run always goes to `mlflow.db` unless told otherwise.

Pure string work and one HTTP probe; imports neither mlflow nor requests (so that the CLI can resolve and
print a URI cheaply). Knows nothing about runs or metrics.
"""

from __future__ import annotations

import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from mlgrpo.errors import UserError

ENV_VAR = "MLFLOW_TRACKING_URI"
DEFAULT_DB = "mlflow.db"
MASK = "***"

# Query parameters that carry secrets in tracking and artifact URIs (tokens, presigned signatures).
_SECRET_QUERY = re.compile(r"(token|secret|password|passwd|pwd|auth|key|sig|signature|credential|sas)", re.I)
_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def default_tracking_uri(cwd: str | Path | None = None) -> str:
    """sqlite:///<absolute working directory>/mlflow.db, MLflow's default store written out in full."""
    return "sqlite:///" + str(Path(cwd or os.getcwd()).resolve() / DEFAULT_DB)


def resolve_tracking_uri(cli_uri: str | None, yaml_uri: str | None) -> str:
    """The store to use: CLI flag, YAML, MLFLOW_TRACKING_URI, default; relative SQLite paths made absolute.

    >>> resolve_tracking_uri("http://127.0.0.1:5000", "sqlite:///x.db")
    'http://127.0.0.1:5000'
    """
    for candidate in (cli_uri, yaml_uri, os.environ.get(ENV_VAR)):
        if candidate and candidate.strip():
            return check_store_kind(absolute_sqlite(candidate.strip()))
    return default_tracking_uri()


def check_store_kind(uri: str) -> str:
    """`uri` unchanged, or a UserError for a folder store (a path or file:// URI): MLflow 3 refuses to open
    one unless MLFLOW_ALLOW_FILE_STORE=true, with an exception that would otherwise surface mid-command."""
    scheme = uri.split("://", 1)[0] if "://" in uri else ""
    folder = scheme in ("", "file") and not uri.startswith("sqlite")
    if folder and os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() not in ("1", "true", "yes"):
        raise UserError(f"tracking URI {mask_uri(uri)} is a folder store, which MLflow 3 keeps in maintenance mode "
                        "and refuses to open; use a database such as sqlite:///mlflow.db or a server URL (or set "
                        "MLFLOW_ALLOW_FILE_STORE=true to use the folder anyway)")
    return uri


def absolute_sqlite(uri: str) -> str:
    """sqlite:///relative.db -> sqlite:////abs/relative.db; other URIs unchanged.

    SQLAlchemy reads three slashes as a path relative to the process's working directory, which
    differs between the runner, its workers and `mlgrpo ui`.
    """
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri == "sqlite://":
        return uri
    path = uri[len(prefix):]
    if path.startswith("/") or path.startswith(":memory:") or not path:
        return uri
    return prefix + str(Path(path).resolve())


def sqlite_path(uri: str) -> Path | None:
    """The database file of a sqlite:/// URI, else None."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return None
    path = uri[len(prefix):].split("?", 1)[0]
    return Path(path) if path and not path.startswith(":memory:") else None


def is_http(uri: str) -> bool:
    return uri.split("://", 1)[0].lower() in ("http", "https")


def mask_uri(uri: str) -> str:
    """The URI with its password (or bare token user) and secret query values replaced by ***.

    >>> mask_uri("https://alice:s3cret@mlflow.example.com/?token=abc&x=1")
    'https://alice:***@mlflow.example.com/?token=***&x=1'
    >>> mask_uri("https://ghp_abc123@host:5000")
    'https://***@host:5000'
    """
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an unbalanced "[" in the host: hide everything after the scheme
        return uri.split("://", 1)[0] + "://" + MASK if "://" in uri else MASK
    masked = uri  # edited in place: urlunsplit would rewrite "sqlite:////abs" as "sqlite://abs"
    if "@" in parts.netloc:
        userinfo, host = parts.netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0] + ":" + MASK if ":" in userinfo else MASK
        masked = masked.replace(parts.netloc, f"{user}@{host}", 1)
    query = re.sub(
        r"(^|&)([^=&]*)=([^&]*)",
        lambda m: f"{m[1]}{m[2]}={MASK}" if _SECRET_QUERY.search(m[2]) else m[0],
        parts.query,
    )
    if query != parts.query:
        masked = masked.replace("?" + parts.query, "?" + query, 1)
    return masked


def mask_text(text: str) -> str:
    """Every URI inside free text masked (error messages from MLflow or requests quote the URL they used)."""
    return _URI_IN_TEXT.sub(lambda m: mask_uri(m[0]), text)


def _probe_url(uri: str) -> str:
    """<uri>/health without userinfo or query: MLflow serves /health to anyone."""
    parts = urlsplit(uri)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/") + "/health", "", ""))


def server_answers(uri: str, timeout_s: float = 3.0) -> str | None:
    """None if the HTTP(S) server behind `uri` answers within `timeout_s`, else why not (one line).

    Any HTTP response counts as an answer (a 401 means the server is there and wants credentials);
    a refused or timed-out connection does not. A refused connection is retried until the deadline,
    so that a server that is just restarting is not reported as down.
    """
    deadline = time.monotonic() + timeout_s
    reason = "no answer"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return reason
        try:
            with urllib.request.urlopen(_probe_url(uri), timeout=min(remaining, 2.0)):
                return None
        except urllib.error.HTTPError:
            return None
        except OSError as exc:  # URLError, refused, timed out
            cause = getattr(exc, "reason", exc)
            reason = mask_text(str(cause)) or type(cause).__name__
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))


def require_server(uri: str, timeout_s: float = 3.0) -> None:
    """Raise a one-line UserError if the tracking server at `uri` does not answer (HTTP(S) URIs only)."""
    if not is_http(uri):
        return
    reason = server_answers(uri, timeout_s)
    if reason is not None:
        raise UserError(
            f"the MLflow tracking server at {mask_uri(uri)} did not answer within {timeout_s:g} s ({reason}); "
            f"start it (mlflow server --host 127.0.0.1 --port PORT), or choose another store with "
            f"--tracking-uri, tracking.uri in the YAML or {ENV_VAR} (with none of them, runs go to "
            f"{DEFAULT_DB} in the working directory)"
        )
