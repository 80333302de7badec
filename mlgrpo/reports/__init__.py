"""Reports: comparisons of training arms (PPO vs GRPO, ...) per language, over seeds and held-out prompts.

    build        mlgrpo report: MLflow (tracking.reader) -> tables -> conclusions -> figures -> HTML, Markdown, CSV
    collect      the runs as arrays aligned by arm, seed, language, prompt and step
    stats        pure numpy statistics: bootstrap intervals, paired tests, Holm, curve summaries
    aggregate    macro / worst / gap rows with a stratified bootstrap
    analysis     the report's tables (DataFrames); conclusions: sentences only the statistics support
    content      what a report says, before rendering; figures: PNGs; render: HTML and Markdown, escaped

Reads MLflow only through mlgrpo.tracking; knows nothing about torch, trainers or models.
"""
