"""The data a run used, as MLflow sees it: a tracked dataset, its language distribution and its data card.

    log_records(child, train_records, "numbers-train", "train", card="data_cards/numbers.md")

logs, on the run: the records as an MLflow dataset (name, digest, schema, row count; shown under
"Datasets used" with the context), data/<name>/languages.json (rows per language) and a bar chart
data/<name>/languages.png, and the card file under data/<name>/. Records are the dicts of
mlgrpo.data.records; only their "language" field is read here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from mlgrpo.tracking.run import RunHandle


def language_distribution(records: Sequence[Mapping]) -> dict[str, int]:
    """Rows per language, most frequent first; rows without a language count as "und".

    >>> language_distribution([{"language": "ja"}, {"language": "en"}, {"language": "ja"}, {}])
    {'ja': 2, 'en': 1, 'und': 1}
    """
    return dict(Counter(r.get("language") or "und" for r in records).most_common())


def distribution_figure(distribution: Mapping[str, int], title: str) -> Figure:
    figure = Figure(figsize=(max(4.0, 0.45 * len(distribution) + 1.5), 3.2))
    axis = figure.add_subplot()
    axis.bar(list(distribution), list(distribution.values()), color="tab:blue")
    axis.set_title(title)
    axis.set_ylabel("rows")
    axis.grid(axis="y", alpha=0.3)
    return figure


def log_records(handle: RunHandle, records: Sequence[Mapping], name: str, context: str,
                card: str | Path | None = None) -> dict[str, int]:
    """Log the records as a dataset with their language distribution (and card); returns the distribution."""
    distribution = language_distribution(records)
    handle.log_dataset(pd.DataFrame(list(records)), name, context)
    handle.log_dict({"dataset": name, "context": context, "rows": len(records), "languages": distribution},
                    f"data/{name}/languages.json")
    handle.log_figure(distribution_figure(distribution, f"{name}: rows per language"), f"data/{name}/languages.png")
    if card is not None:
        handle.log_artifact(card, f"data/{name}")
    return distribution
