"""Against TRL's own RepeatSampler: the sampler GRPOTrainer._get_train_sampler builds, which ours replaces."""

import numpy as np
import pytest
from trl.trainer.utils import RepeatSampler

from mlgrpo.sampling import LanguageSampler, SamplerConfig

from .layout import generation_batches


@pytest.mark.parametrize("mini_repeat_count, batch_size, repeat_count", [(4, 8, 1), (2, 6, 3), (8, 7, 2)])
def test_same_length_and_layout_as_trls_repeat_sampler(mini_repeat_count, batch_size, repeat_count, languages):
    shape = dict(mini_repeat_count=mini_repeat_count, batch_size=batch_size, repeat_count=repeat_count)
    theirs = RepeatSampler(languages, seed=0, **shape)
    ours = LanguageSampler(languages, SamplerConfig(), **shape)
    assert len(ours) == len(theirs)
    theirs_prompts = generation_batches(list(theirs), **shape)
    ours_prompts = generation_batches(list(ours), **shape)
    assert ours_prompts.shape == theirs_prompts.shape
    # uniform, one draw per row: like TRL's, an epoch draws distinct rows, each once
    assert np.unique(ours_prompts).size == ours_prompts.size
