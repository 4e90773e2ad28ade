"""The one in-memory least-recently-used cache: targets keep instances and lowered kernels
(megabytes each) for the few workloads a search or a bench is evaluating, and the Gemmini
loop unroller its expansion templates.

`functools.lru_cache` stays for pure functions of small hashable arguments (it memoises a
function); `Lru` is for caches an object owns and fills with a builder.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(OrderedDict[K, V], Generic[K, V]):
    """At most `size` entries; `get_or` builds a missing one and evicts the oldest."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_or(self, key: K, make: Callable[[], V]) -> V:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = self[key] = make()
        while len(self) > self.size:
            self.popitem(last=False)
        return value
