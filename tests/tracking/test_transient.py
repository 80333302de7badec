"""Which store errors are worth a retry: the store away or busy, or two runs inserting one dataset at once."""

from __future__ import annotations

from mlflow.exceptions import MlflowException, RestException

from mlgrpo.tracking.run import is_transient


def test_two_runs_inserting_the_same_dataset_is_retried():
    # what an `mlflow server` on SQLite answered when two workers logged the same training data together
    race = RestException({"error_code": "BAD_REQUEST", "message": "(sqlite3.IntegrityError) UNIQUE constraint "
                          "failed: datasets.experiment_id, datasets.name, datasets.digest"})
    assert is_transient(race)


def test_a_refused_write_is_not_retried():
    assert not is_transient(MlflowException("Invalid metric name: 'a b!'", error_code="INVALID_PARAMETER_VALUE"))
    assert not is_transient(ValueError("UNIQUE constraint failed: runs.run_uuid"))
