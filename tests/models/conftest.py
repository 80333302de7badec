"""One tiny build shared by the tests of this folder: a 30k-parameter model, 5 SFT steps, seconds.

The target exact match is 0, so the warm start stops at the first check (step 5): the build runs
the whole pipeline (suite -> tokenizer -> Qwen2 -> TRL SFT -> measure -> save) at test speed.
"""

from __future__ import annotations

import pytest

from mlgrpo.models.settings import TinySettings

# Three scripts: Latin, Japanese (Han), Cyrillic.
TEST_SETTINGS = TinySettings(
    languages=("en", "ja", "ru"),
    train_per_language=40,
    vocab_size=400,
    hidden_size=32,
    num_layers=1,
    num_heads=2,
    intermediate_size=64,
    max_positions=64,
    batch_size=8,
    warmup_steps=0,
    max_steps=20,
    check_every=5,
    target_exact_match=0.0,
    eval_per_language=4,
    final_eval_per_language=4,
)


@pytest.fixture(scope="session")
def tiny_settings() -> TinySettings:
    return TEST_SETTINGS


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """(models_dir, folder) of a test build; tests must not modify the folder (copy it first).

    models_dir is `<cache>/models`, the layout of MLGRPO_CACHE=<cache>.
    """
    from mlgrpo.models.tiny import build_tiny

    models_dir = tmp_path_factory.mktemp("cache") / "models"
    return models_dir, build_tiny(TEST_SETTINGS, models_dir=models_dir)
