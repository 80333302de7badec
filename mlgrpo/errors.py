"""Errors meant for people: what was wrong, where, and what to do.

The CLI prints a UserError as one line and exits non-zero, never with a traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (file, argument, config). The message is shown as is."""

    exit_code = 2


class DataError(UserError):
    """A data file or row that cannot be used; the message names the file and row."""
