"""The `exact_match` evaluate module (a folder that evaluate.load reads)."""
