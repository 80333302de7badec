"""The `distinct` evaluate module (a folder that evaluate.load reads)."""
