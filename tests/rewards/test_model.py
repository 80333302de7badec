"""reward_model on a tiny randomly initialised classifier built here (nothing from a hub)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mlgrpo.errors import UserError  # noqa: E402
from mlgrpo.rewards import RewardSpec, build_reward_functions  # noqa: E402
from mlgrpo.rewards.model import load_reward_model, reward_model  # noqa: E402

CORPUS = ["二十一", "ishirini na moja", "двадцать один", "einundzwanzig", "واحد وعشرون", "इक्कीस", "twenty-one"]
PROMPTS = ["<zh> 21 -> ", "<sw> 21 -> ", "<ru> 21 -> ", "<de> 21 -> ", "<ar> 21 -> ", "<hi> 21 -> ", "<en> 21 -> "]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForSequenceClassification

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(PROMPTS + CORPUS, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>")  # no pad token on purpose
    config = Qwen2Config(vocab_size=bpe.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, num_labels=1, max_position_embeddings=128)
    torch.manual_seed(0)
    model = Qwen2ForSequenceClassification(config)
    folder = tmp_path_factory.mktemp("tiny_rm")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    # A second classifier with fewer embeddings than the tokenizer has tokens.
    small = Qwen2ForSequenceClassification(Qwen2Config(**{**config.to_dict(), "vocab_size": 100}))
    small.save_pretrained(folder / "too_small")
    tokenizer.save_pretrained(folder / "too_small")
    return folder


def _one_by_one(folder, texts):
    model, tokenizer = load_reward_model(str(folder), "cpu")
    scores = []
    with torch.no_grad():
        for text in texts:
            ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)
            scores.append(model(**ids).logits[0, 0].item())
    return scores


def test_batched_scores_equal_one_by_one_scores_of_prompt_plus_completion(model_dir):
    # Batches of 3 pad the shorter texts; padding must not change a score.
    got = reward_model(PROMPTS, CORPUS, path=str(model_dir), batch_size=3, device="cpu")
    expected = _one_by_one(model_dir, [p + c for p, c in zip(PROMPTS, CORPUS)])
    assert got == pytest.approx(expected, abs=1e-5)
    assert len(set(round(v, 6) for v in got)) == len(got)  # a random model tells the texts apart


def test_loaded_once_and_run_without_gradients(model_dir):
    funcs, _ = build_reward_functions([RewardSpec("reward_model", label="tiny_rm",
                                                  params={"path": str(model_dir), "device": "cpu"})])
    misses = load_reward_model.cache_info().misses
    model, _ = load_reward_model(str(model_dir), "cpu")
    modes = []
    handle = model.register_forward_hook(lambda *_: modes.append(torch.is_inference_mode_enabled()))
    try:
        for _ in range(3):
            out = funcs[0](prompts=PROMPTS[:2], completions=CORPUS[:2], trainer_state=None)
    finally:
        handle.remove()
    assert load_reward_model.cache_info().misses == misses  # built once at build time, reused since
    assert modes == [True, True, True] and all(type(v) is float for v in out)
    assert funcs[0].__name__ == "tiny_rm"


def test_left_truncation_keeps_the_completion(model_dir):
    # Cut to 4 tokens from the left, two inputs that share only their ending score the same.
    got = reward_model(["a long prompt in one language ", "другой длинный "], ["twenty-one", "twenty-one"],
                       path=str(model_dir), max_length=4, device="cpu")
    assert got[0] == pytest.approx(got[1], abs=1e-5)


def test_the_tokenizer_is_loaded_as_saved(model_dir):
    from transformers import PreTrainedTokenizerFast

    # transformers' AutoTokenizer would swap in Qwen2Tokenizer here (other ids, one token too many).
    _, tokenizer = load_reward_model(str(model_dir), "cpu")
    saved = PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"))
    for text in PROMPTS + CORPUS:
        assert tokenizer(text, add_special_tokens=False).input_ids == saved(text, add_special_tokens=False).input_ids
    assert len(tokenizer) == len(saved) == 300


def test_bad_paths_and_labels_fail_at_build_time(model_dir, tmp_path):
    with pytest.raises(UserError, match="has 300 tokens but the model only 100 embeddings"):
        build_reward_functions([RewardSpec("reward_model", params={"path": str(model_dir / "too_small")})])
    with pytest.raises(UserError, match="is not a saved model folder"):
        build_reward_functions([RewardSpec("reward_model", params={"path": str(tmp_path / "nowhere")})])
    with pytest.raises(UserError, match="label_index 1 is outside the model's 1 output"):
        build_reward_functions([RewardSpec("reward_model", params={"path": str(model_dir), "device": "cpu",
                                                                   "label_index": 1})])
