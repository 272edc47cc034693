"""``tritium.Config``: one autotuning configuration (Triton's signature)."""
from __future__ import annotations

from typing import Any, Callable, Optional


class Config:
    """Meta-parameters (``kwargs``) and compile options of one kernel configuration."""

    def __init__(self, kwargs: dict, num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: Optional[int] = None, pre_hook: Optional[Callable] = None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """Meta-parameters and options together, as a launch passes them."""
        opts = {"num_warps": self.num_warps, "num_stages": self.num_stages, "num_ctas": self.num_ctas,
                "maxnreg": self.maxnreg}
        return {**self.kwargs, **{k: v for k, v in opts.items() if v is not None}}

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Config) and self.all_kwargs() == other.all_kwargs()

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self.all_kwargs().items())))

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                  f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    __repr__ = __str__
