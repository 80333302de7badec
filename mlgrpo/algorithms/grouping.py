"""Group keys: which rows share a baseline, as int64 id tensors for `group_stats`.

`GroupKeys` carries what a batch knows about its rows (prompt identity, language, a stable prompt hash,
the prompt's length in tokens, the completion's); the functions in `GROUP_KEYS` turn it into one id per row, looked up by the config's
`group_by` name:

    prompt              rows sampled from the same prompt (GRPO's standard group)
    language            rows of the same language (one baseline per language)
    prompt_in_language  the same prompt in the same language (a prompt id reused across languages
                        gives one group per language)
    prompt_hash_bucket  hash(prompt) % n buckets: prompts pooled into coarser groups (a larger baseline
                        when few samples are drawn per prompt); the hash is blake2b, not Python's
                        hash(), which is salted per process and would differ between ranks and runs
    length_bucket       rows whose prompt length (tokens) falls in the same bucket of `length_edges`: a
                        property of the state, never of the sampled completion, whose length would make
                        the baseline depend on the action it scores

Building keys from strings is host work done once per batch; the id functions are tensor ops.
Knows nothing about models, tokenizers, rewards or MLflow.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from mlgrpo.algorithms.group_stats import pair_ids
from mlgrpo.algorithms.registry import Registry
from mlgrpo.errors import UserError

_HASH_MASK = (1 << 63) - 1  # keep hashes non-negative in int64


@dataclass(frozen=True)
class GroupKeys:
    """What the batch knows about its N rows, on the rewards' device."""

    prompt_ids: Tensor  # (N,) int64: rows from the same prompt share an id
    lang_ids: Tensor  # (N,) int64 in [0, len(languages))
    languages: tuple[str, ...]  # languages[i] is the code of lang id i (names per-language metrics)
    prompt_hashes: Tensor | None = None  # (N,) int64 stable hash of the prompt text (hash buckets)
    lengths: Tensor | None = None  # (N,) int64 prompt tokens per row (length_bucket grouping)
    completion_lengths: Tensor | None = None  # (N,) int64 completion tokens per row (token-weighted estimators)

    def __post_init__(self) -> None:
        n = self.prompt_ids.shape[0]
        for name in ("prompt_ids", "lang_ids", "prompt_hashes", "lengths", "completion_lengths"):
            t = getattr(self, name)
            if t is not None and (t.dim() != 1 or t.shape[0] != n or t.dtype != torch.int64):
                shape = tuple(t.shape)
                raise ValueError(f"GroupKeys.{name} must be an int64 tensor of shape ({n},), got {t.dtype} {shape}")

    @property
    def size(self) -> int:
        return self.prompt_ids.shape[0]

    @classmethod
    def from_rows(
        cls,
        prompts: Sequence[str],
        languages: Sequence[str],
        *,
        group_size: int | None = None,
        lengths: Sequence[int] | None = None,
        completion_lengths: Sequence[int] | None = None,
        device: torch.device | str = "cpu",
    ) -> GroupKeys:
        """Keys for a batch of rows (one prompt text and one language code per row).

        group_size=None: rows with equal prompt text share a prompt id. group_size=G: TRL's layout, rows
        [k*G, (k+1)*G) are the G completions of prompt k (a prompt drawn twice is then two groups, as in
        TRL); every block must hold one prompt text.
        """
        if len(prompts) != len(languages):
            raise UserError(f"GroupKeys: {len(prompts)} prompts but {len(languages)} language codes; give one per row")
        if group_size is None:
            first_row: dict[str, int] = {}
            ids = [first_row.setdefault(p, len(first_row)) for p in prompts]
        else:
            ids = _block_ids(prompts, group_size)
        codes = tuple(sorted(set(languages)))
        code_id = {c: i for i, c in enumerate(codes)}

        def tensor(xs: Sequence[int]) -> Tensor:
            return torch.tensor(list(xs), dtype=torch.int64, device=device)

        return cls(
            prompt_ids=tensor(ids),
            lang_ids=tensor(code_id[c] for c in languages),
            languages=codes,
            prompt_hashes=tensor(stable_hash(p) for p in prompts),
            lengths=None if lengths is None else tensor(lengths),
            completion_lengths=None if completion_lengths is None else tensor(completion_lengths),
        )


@dataclass(frozen=True)
class GroupingParams:
    """The parameters some group keys need (from AdvantageConfig)."""

    hash_buckets: int = 32
    length_edges: tuple[int, ...] = (32, 64, 128, 256, 512)


GroupKeyFn = Callable[[GroupKeys, GroupingParams], Tensor]
GROUP_KEYS: Registry[GroupKeyFn] = Registry("group key")


@GROUP_KEYS.register("prompt")
def by_prompt(keys: GroupKeys, params: GroupingParams) -> Tensor:
    return keys.prompt_ids


@GROUP_KEYS.register("language")
def by_language(keys: GroupKeys, params: GroupingParams) -> Tensor:
    return keys.lang_ids


@GROUP_KEYS.register("prompt_in_language")
def by_prompt_in_language(keys: GroupKeys, params: GroupingParams) -> Tensor:
    return pair_ids(keys.lang_ids, keys.prompt_ids)


@GROUP_KEYS.register("prompt_hash_bucket")
def by_prompt_hash_bucket(keys: GroupKeys, params: GroupingParams) -> Tensor:
    if keys.prompt_hashes is None:
        raise UserError("group_by='prompt_hash_bucket' needs prompt hashes: build the keys with GroupKeys.from_rows")
    return keys.prompt_hashes % params.hash_buckets


@GROUP_KEYS.register("length_bucket")
def by_length_bucket(keys: GroupKeys, params: GroupingParams) -> Tensor:
    """Bucket b holds lengths in [edges[b-1], edges[b]); bucket 0 is below edges[0]."""
    if keys.lengths is None:
        raise UserError("group_by='length_bucket' needs each row's prompt tokens: pass lengths= to GroupKeys.from_rows")
    edges = torch.tensor(params.length_edges, dtype=torch.int64, device=keys.lengths.device)
    return torch.bucketize(keys.lengths, edges, right=True)


def stable_hash(text: str) -> int:
    """A 63-bit hash of `text` that is the same in every process, run and machine."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _HASH_MASK


def _block_ids(prompts: Sequence[str], group_size: int) -> list[int]:
    if group_size < 1 or len(prompts) % group_size:
        raise UserError(f"GroupKeys: {len(prompts)} rows do not split into groups of {group_size}")
    for start in range(0, len(prompts), group_size):
        block = prompts[start : start + group_size]
        if any(p != block[0] for p in block):
            raise UserError(
                f"GroupKeys: rows {start}..{start + group_size - 1} should be {group_size} completions of one "
                f"prompt but hold different prompts; check the sampler's repeat layout or pass group_size=None"
            )
    return [row // group_size for row in range(len(prompts))]
