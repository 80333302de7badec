"""The `language_consistency` evaluate module (a folder that evaluate.load reads)."""
