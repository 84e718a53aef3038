"""How the red team configures a provider: no hidden retries, small answers from a CPU model.

The model-call ceiling counts requests that leave the process. A provider that retried on its
own would send requests the ceiling cannot see, so red-team runs turn provider retries off: a
failed call is a probe error (infrastructure), never a silent extra call. A local CPU model
gets small output ceilings, because a red-team answer needs a few sentences, not pages, and a
campaign on two cores should take minutes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vitrine.providers._config import ProviderConfig

__all__ = ["LOCAL_JUDGE_TOKENS", "LOCAL_SUBJECT_TOKENS", "redteam_config"]

LOCAL_SUBJECT_TOKENS = 256
LOCAL_JUDGE_TOKENS = 120


def redteam_config(config: ProviderConfig) -> ProviderConfig:
    """``config`` for red-team runs: no provider retries, small token limits on a local model."""

    config = replace(config, max_retries=0)
    if config.provider != "local":
        return config
    return replace(
        config,
        subject_max_output_tokens=min(config.subject_max_output_tokens, LOCAL_SUBJECT_TOKENS),
        judge_max_output_tokens=min(config.judge_max_output_tokens, LOCAL_JUDGE_TOKENS),
    )
