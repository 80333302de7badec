"""The `chrf` evaluate module (a folder that evaluate.load reads)."""
