"""The `rouge_l` evaluate module (a folder that evaluate.load reads)."""
