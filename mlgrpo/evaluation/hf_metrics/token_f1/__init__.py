"""The `token_f1` evaluate module (a folder that evaluate.load reads)."""
