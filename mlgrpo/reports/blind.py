"""A blind A/B sheet for human raters, and its key, kept where the raters do not look.

For each arm against the baseline, every sampled prompt with the two outputs in random A/B order goes
to `<report>/blind/sheet.csv`; which arm is A goes to `<report>.private/blind-key-<sheet>.csv`, a folder
beside the report, so that neither the report folder (which `mlgrpo run` also logs to MLflow as the
parent run's `report` artifact) nor MLflow holds it. The order is drawn from the operating system's
randomness, not from a seed a rater could recompute; each sheet carries an id that names its key, and a
new report makes a new sheet and a new key without overwriting an older key (ratings of an older sheet
still decode).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pandas as pd

from mlgrpo.reports import analysis
from mlgrpo.reports.collect import Comparison


def key_folder(report_folder: Path) -> Path:
    return report_folder.parent / f"{report_folder.name}.private"


def blind_export(comp: Comparison, report_folder: Path) -> tuple[Path | None, Path | None]:
    """(sheet, key), or (None, None) when no arm pair has samples of the same seed."""
    seed = comp.seeds[0] if comp.seeds else None
    sheet_id = secrets.token_hex(4)
    order = secrets.SystemRandom()
    sheet, key = [], []
    for arm, base in analysis.pairs(comp):
        if seed not in comp.runs[arm] or seed not in comp.runs[base]:
            continue
        a_samples = {s.get("id"): s for s in comp.samples(comp.runs[arm][seed])}
        b_samples = {s.get("id"): s for s in comp.samples(comp.runs[base][seed])}
        for item in sorted(set(a_samples) & set(b_samples), key=str):
            first, second = (arm, base) if order.random() < 0.5 else (base, arm)
            outputs = {arm: a_samples[item].get("completion", ""), base: b_samples[item].get("completion", "")}
            row_id = f"{len(sheet) + 1:04d}"
            sheet.append({"sheet": sheet_id, "row": row_id, "language": a_samples[item].get("language", ""),
                          "prompt": cell(a_samples[item].get("prompt", "")), "output A": cell(outputs[first]),
                          "output B": cell(outputs[second]), "preferred (A, B or tie)": "", "comment": ""})
            key.append({"sheet": sheet_id, "row": row_id, "item": item, "A": first, "B": second, "seed": seed})
    if not sheet:
        return None, None
    (report_folder / "blind").mkdir(parents=True, exist_ok=True)
    private = key_folder(report_folder)
    private.mkdir(parents=True, exist_ok=True)
    sheet_path, key_path = report_folder / "blind" / "sheet.csv", private / f"blind-key-{sheet_id}.csv"
    (report_folder / "blind" / "key.csv").unlink(missing_ok=True)  # where reports before this one left it
    pd.DataFrame(sheet).to_csv(sheet_path, index=False)
    pd.DataFrame(key).to_csv(key_path, index=False)
    return sheet_path, key_path


def cell(text) -> str:
    """Model text for a spreadsheet: a leading = + - @ (or tab / CR) would make it a formula there (CSV
    injection), so such cells get a leading apostrophe, which spreadsheets show as text."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
