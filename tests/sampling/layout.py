"""TRL's RepeatSampler index layout, as a check shared by the sampler tests."""

from __future__ import annotations

import numpy as np


def generation_batches(indices, *, mini_repeat_count: int, batch_size: int, repeat_count: int) -> np.ndarray:
    """(batches, batch_size) the prompts drawn per generation batch, after checking TRL's layout:
    each prompt G times in a row, the batch of batch_size prompts repeated repeat_count times."""
    arr = np.asarray(list(indices)).reshape(-1, repeat_count, batch_size, mini_repeat_count)
    assert (arr == arr[:, :1]).all(), "a generation batch is not repeated repeat_count times"
    assert (arr == arr[..., :1]).all(), "a prompt is not repeated G times in a row"
    return arr[:, 0, :, 0]
