"""The `bleu` evaluate module (a folder that evaluate.load reads)."""
