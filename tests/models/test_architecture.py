"""The Qwen2 config: sized by the settings, with the parameter count worked by hand."""

from __future__ import annotations

from mlgrpo.models.architecture import count_parameters, init_model, tiny_config


def test_parameter_count_by_hand(built, tiny_settings):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built[1])
    assert len(tokenizer) == 400  # the test vocabulary is full: 256 bytes + 142 merges + 2 specials
    model = init_model(tiny_settings, tokenizer)
    # hidden 32, 2 heads of 16, 1 layer, MLP 64, vocab 400, embeddings tied with the output head:
    #   embeddings                        400 * 32                =  12,800
    #   q, k, v projections (with bias)   3 * (32 * 32 + 32)      =   3,168
    #   o projection (no bias)            32 * 32                 =   1,024
    #   gate, up, down                    3 * 32 * 64             =   6,144
    #   two RMSNorms in the layer, final  3 * 32                  =      96
    #                                                               = 23,232
    assert count_parameters(model) == 23_232


def test_config_follows_the_settings_and_the_tokenizer(built, tiny_settings):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built[1])
    config = tiny_config(tiny_settings, tokenizer)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (32, 1, 2)
    assert (config.pad_token_id, config.eos_token_id) == (tokenizer.pad_token_id, tokenizer.eos_token_id)
    assert config.tie_word_embeddings and config.vocab_size == len(tokenizer)


def test_same_seed_same_initial_weights(built, tiny_settings):
    import dataclasses

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built[1])
    first, second = init_model(tiny_settings, tokenizer), init_model(tiny_settings, tokenizer)
    other = init_model(dataclasses.replace(tiny_settings, seed=5), tokenizer)
    assert all(a.equal(b) for a, b in zip(first.parameters(), second.parameters()))
    assert not all(a.equal(b) for a, b in zip(first.parameters(), other.parameters()))
