"""Reading tritium's (and Triton's) boolean environment variables in one way: ``1``, ``true``, ``yes`` or ``on``
(any case, surrounding spaces ignored) is true, anything else or unset false."""
from __future__ import annotations

import os
from typing import Optional

TRUE_WORDS = ("1", "true", "yes", "on")


def is_true(value: Optional[str]) -> bool:
    """Whether an environment variable's value means true (None: unset, false)."""
    return value is not None and value.strip().lower() in TRUE_WORDS


def env_flag(*names: str) -> bool:
    """Whether any of the environment variables ``names`` is set to a true value."""
    return any(is_true(os.environ.get(n)) for n in names)
