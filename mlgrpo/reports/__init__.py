"""Reports: comparisons of training arms (PPO vs GRPO, ...) per language, over seeds and held-out prompts.

stats.py holds the pure numpy statistics (bootstrap intervals, paired tests, Holm correction, curve
summaries). Knows nothing about torch, trainers or MLflow.
"""
