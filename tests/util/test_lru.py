"""`zomboss.util.lru.Lru`: builds a missing entry once, keeps at most `size`, evicts the least
recently used (a hit counts as a use)."""

from __future__ import annotations

from zomboss.util.lru import Lru


def test_builds_once_and_evicts_the_least_recently_used() -> None:
    built: list[str] = []

    def make(k: str) -> str:
        built.append(k)
        return k.upper()

    cache: Lru[str, str] = Lru(2)
    assert cache.get_or("a", lambda: make("a")) == "A"
    assert cache.get_or("b", lambda: make("b")) == "B"
    assert cache.get_or("a", lambda: make("a")) == "A"  # a hit: not rebuilt, now the most recent
    assert built == ["a", "b"]
    cache.get_or("c", lambda: make("c"))  # over size: b, the least recently used, goes
    assert list(cache) == ["a", "c"]
    cache.get_or("b", lambda: make("b"))
    assert built == ["a", "b", "c", "b"] and list(cache) == ["c", "b"]


def test_size_zero_keeps_nothing_but_still_answers() -> None:
    cache: Lru[int, int] = Lru(0)
    assert cache.get_or(1, lambda: 10) == 10
    assert len(cache) == 0
