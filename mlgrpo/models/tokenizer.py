"""A byte-level BPE tokenizer trained on a suite's own text.

Byte-level means every string of every script encodes without an unknown token: the 256 byte
values are in the vocabulary and merges only shorten sequences. Text is NFC-normalised (as
mlgrpo.text.normalize does everywhere), so `decode(encode(text)) == text` for any NFC text.

AutoTokenizer loads every "qwen2" folder through transformers' Qwen2Tokenizer, which rebuilds the
normaliser (NFC) and pre-tokenizer (its split regex, then byte-level) from its own code and ignores
those in tokenizer.json. Training uses the same pipeline with one step added before it: each Han or
kana character is its own pre-token. Without that step BPE learned "二百四十" as one token and
Japanese stayed at 0 exact match while every other language passed 0.2. Since no merge then spans
two such characters, the loaded pipeline cuts the same tokens; `mismatches` checks it on real text
and the build refuses a tokenizer that fails. The regex also makes each digit a token, as in
Llama and Qwen, so that a number is spelled digit by digit and not memorised whole.
Knows nothing about models, training or the cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

# Spelled so that they never occur in suite text (whose language tags look like "<ja>").
PAD_TOKEN = "<|pad|>"
EOS_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = (PAD_TOKEN, EOS_TOKEN)
CJK_CHARACTER = r"[\p{Han}\p{Hiragana}\p{Katakana}]"

# Just enough for TRL's conversational path: the user's turn is the prompt, the assistant's turn
# follows after one space, and the turn ends with EOS. Plain prompt strings need no template.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %} {{ message['content'] }}" + EOS_TOKEN + "{% else %}"
    "{{ message['content'] }}{% endif %}{% endfor %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Train byte-level BPE on `texts` (deterministic for the same texts in the same order)."""
    core = Tokenizer(models.BPE())
    core.normalizer = normalizers.NFC()
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(CJK_CHARACTER), behavior="isolated", invert=False),
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD_TOKEN,
        eos_token=EOS_TOKEN,
        padding_side="left",  # generation appends on the right, so prompts are padded on the left
        clean_up_tokenization_spaces=False,  # keep " ," and " 's" exactly as written
        chat_template=CHAT_TEMPLATE,
    )


def mismatches(trained: PreTrainedTokenizerBase, loaded: PreTrainedTokenizerBase, texts: Iterable[str]) -> list[str]:
    """The texts that `loaded` (the tokenizer as AutoTokenizer reads it back) cuts differently."""
    return [text for text in texts if trained(text)["input_ids"] != loaded(text)["input_ids"]]
