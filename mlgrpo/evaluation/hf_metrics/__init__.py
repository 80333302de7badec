"""Hugging Face `evaluate` modules, one folder each; load them with
`evaluate.load(mlgrpo.evaluation.hf.hf_metric_path(name))`. See mlgrpo.evaluation.hf."""
