"""Hostile user text through a real experiment: prompts and answers carrying HTML, JavaScript, attribute
breakers and bidi overrides go through `mlgrpo run` (training, evaluation, MLflow, the report at the end)
and the report contains none of them unescaped."""

from __future__ import annotations

import html
import json
import re
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

TRIMMED = Path(__file__).parents[1] / "experiments" / "trimmed.yaml"
HOSTILE = ["<script>alert(1)</script>", "</script><script>alert(2)</script>", "<img src=x onerror=alert(3)>",
           "\" onmouseover=\"alert(4)", "' autofocus onfocus='alert(5)", "<svg/onload=alert(6)>",
           "<a href=\"javascript:alert(7)\">x</a>", "\u202egnp.exe", "<style>body{display:none}</style>",
           "<iframe src=\"http://evil.example\"></iframe>"]
WORDS = {"en": ["zero", "one", "two", "three", "four", "five"], "ja": ["零", "一", "二", "三", "四", "五"]}
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "nav", "section", "div", "h1",
                "h2", "h3", "h4", "p", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "img",
                "figure", "figcaption", "span", "bdi", "code", "em", "strong", "br", "small", "caption", "details",
                "summary", "aside"}


def write_data(path: Path, offset: int) -> None:
    rows = []
    for lang, words in WORDS.items():
        for i, hostile in enumerate(HOSTILE):
            n = (i + offset) % len(words)
            rows.append({"prompt": f"<{lang}> number: {n} {hostile} ->", "reference": f"{words[n]} {hostile}",
                         "language": lang, "id": f"{lang}-{offset}-{i}"})
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.style_blocks = set(), [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        self.style_blocks += tag == "style"


def run_hostile(tmp_path: Path, name: str, *edits: tuple[str, str]) -> tuple[str, str]:
    """`mlgrpo run` of the trimmed quickstart on train.jsonl / eval.jsonl, with `edits`: (report.html, report.md)."""
    text = TRIMMED.read_text(encoding="utf-8").replace("name: trimmed-quickstart", f"name: {name}")
    for old, new in (("  suite: numbers\n  languages: [en, ja]\n  per_language: {en: 40, ja: 40}\n",
                      "  file: train.jsonl\n  eval_file: eval.jsonl\n  languages: [en, ja]\n"),
                     ("  max_steps: 4\n", "  max_steps: 2\n"), *edits):
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "hostile.yaml").write_text(text, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", "run", "hostile.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    folder = tmp_path / "reports" / name
    return (folder / "report.html").read_text(encoding="utf-8"), (folder / "report.md").read_text(encoding="utf-8")


def assert_inert(page_text: str) -> None:
    """No tag, attribute, link or bidi override in the page but the report's own."""
    page = Page()
    page.feed(page_text)
    assert page.tags <= ALLOWED_TAGS, page.tags - ALLOWED_TAGS
    assert "script" not in page.tags and "iframe" not in page.tags and "svg" not in page.tags
    assert page.style_blocks == 1  # the report's own stylesheet only
    assert not [a for a in page.attrs if a[1].startswith("on") or a[1] in ("autofocus", "srcdoc")]
    assert all(v.startswith("data:image/png;base64,") for t, k, v in page.attrs if k == "src")
    assert not [v for t, k, v in page.attrs if k == "href" and not v.startswith("#")]
    assert "\u202e" not in page_text


@pytest.mark.slow
def test_hostile_prompts_and_answers_are_escaped_in_the_report(tmp_path, reliability):
    write_data(tmp_path / "train.jsonl", 0)
    write_data(tmp_path / "eval.jsonl", 3)
    page_text, markdown = run_hostile(tmp_path, "hostile")
    assert_inert(page_text)
    assert "<script>alert(1)</script>" in html.unescape(page_text)  # shown to the reader as text, in the samples
    assert "<script>" not in markdown and "\u202e" not in markdown
    reliability.record("security", f"{len(HOSTILE)} hostile strings x 2 languages in prompts and answers through "
                       "mlgrpo run into report.html and report.md", "passed", tried=len(HOSTILE) * 2 * 2)

def build_hostile_model(folder: Path, prompts: list[str]) -> str:
    """A tiny Qwen2 taught (a few seconds of supervised steps) to answer every prompt with all of HOSTILE,
    each one token of its tokenizer: the experiment's generations, not its data, carry the attack."""
    import torch

    from mlgrpo.models.architecture import init_model
    from mlgrpo.models.settings import TinySettings
    from mlgrpo.models.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(prompts + [w for words in WORDS.values() for w in words], 300)
    tokenizer.add_tokens(HOSTILE)
    model = init_model(TinySettings(hidden_size=32, num_heads=2, num_layers=1, intermediate_size=64), tokenizer)
    target = tokenizer(" " + "".join(HOSTILE))["input_ids"] + [tokenizer.eos_token_id]
    batch = [tokenizer(p)["input_ids"] + target for p in prompts]
    width = max(map(len, batch))
    ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(b)) + b for b in batch])
    mask = (ids != tokenizer.pad_token_id).long()
    labels = ids.clone()
    labels[:, : width - len(target)] = -100  # learn the completion only
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(150):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(folder)  # safetensors
    tokenizer.save_pretrained(folder)
    prompt = tokenizer(prompts[:1], return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**prompt, max_new_tokens=len(target), do_sample=False)
    return tokenizer.decode(out[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True)


@pytest.mark.slow
def test_hostile_generations_are_escaped_in_the_report(tmp_path, reliability):
    """Prompts and references are plain; the policy writes the HTML, JavaScript and bidi overrides."""
    rows = {name: [{"prompt": f"<{lang}> number: {n} ->", "reference": words[n], "language": lang, "id": f"{lang}-{n}"}
                   for lang, words in WORDS.items() for n in numbers]
            for name, numbers in (("train", range(4)), ("eval", range(2, 6)))}
    for name, records in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n",
                                                encoding="utf-8")
    greedy = build_hostile_model(tmp_path / "hostile-model", [r["prompt"] for r in rows["train"] + rows["eval"]])
    assert greedy.strip() == "".join(HOSTILE)  # what the policy says before any RL step
    tiny = re.search(r'  policy: "tiny:[^"]*"\n', TRIMMED.read_text(encoding="utf-8")).group()
    page_text, markdown = run_hostile(tmp_path, "hostile-generations", (tiny, '  policy: "./hostile-model"\n'),
                                      ("  max_completion_length: 8\n", "  max_completion_length: 16\n"),
                                      ("  max_new_tokens: 8\n", "  max_new_tokens: 16\n"))
    assert_inert(page_text)
    shown = html.unescape(page_text)
    shown_hostile = [h for h in HOSTILE if h.replace("\u202e", "") in shown]
    assert len(shown_hostile) == len(HOSTILE), set(HOSTILE) - set(shown_hostile)  # the generations, as text
    assert re.search(r"(?<!\\)<(script|iframe|img|svg|style|a )", markdown) is None  # every one backslash-escaped
    assert "\\<iframe" in markdown and "\u202e" not in markdown
    reliability.record("security", f"{len(HOSTILE)} hostile strings written by the policy (a model taught to emit "
                       "them) through mlgrpo run into report.html and report.md", "passed", tried=len(HOSTILE))
