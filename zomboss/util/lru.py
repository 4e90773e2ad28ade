"""A small in-memory least-recently-used cache: targets keep instances and lowered kernels
(megabytes each) for the few workloads a search or a bench is evaluating."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class Lru(OrderedDict):
    """At most `size` entries; `get_or` builds a missing one and evicts the oldest."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_or(self, key: Hashable, make: Callable[[], Any]) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = self[key] = make()
        while len(self) > self.size:
            self.popitem(last=False)
        return value
