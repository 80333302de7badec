"""Data layer: read user files and built-in suites into clean, language-tagged prompt records.

Reads any supported format and encoding, normalises text, identifies languages, and accounts for
every row (written, or listed in the problem ledger). Knows nothing about models, trainers or MLflow.
"""
