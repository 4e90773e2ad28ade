"""Inline workload specs: every key has a domain (issue #29, items 15 and 17), and a message
about a huge value or spec stays one short line."""

from __future__ import annotations

import pytest

from zomboss.errors import WorkloadError
from zomboss.target import get_target
from zomboss.workload import MAX_WORKLOAD_VALUE


@pytest.mark.parametrize(
    ("target", "spec", "message"),
    [
        ("gemmini", "matmul:M=" + "9" * 4000 + ",N=16,K=16", "value of 'M' must be an integer in 0..2147483647"),
        ("vta", "dense:M=" + "9" * 4000 + ",N=16,K=16", "value of 'M' must be an integer in 0..2147483647"),
        ("plena", "linear:M=" + "9" * 4000 + ",K=64,N=64", "value of 'M' must be an integer in 0..2147483647"),
        ("vta", "dense:M=3000000000,N=16,K=16", "M=3000000000 is outside 1..2147483647, the domain of dense's M"),
        ("vta", "conv2d:H=8,W=8,C=16,K=16,R=3,S=3,stride=0,pad=1", "stride=0 is outside 1..2147483647"),
        ("vta", "dense:M=16,N=16,K=16,shift=40", "shift=40 is outside 0..31, the domain of dense's shift"),
        ("vta", "dense:M=16,N=16,K=16,clip=2", "clip=2 is outside 0..1"),
        ("plena", "attention:sq=64,skv=64,causal=-1", "causal=-1 is outside 0..1"),
    ],
)
def test_workload_keys_outside_their_domain_are_named(target, spec, message):
    with pytest.raises(WorkloadError) as e:
        get_target(target).workload(spec)
    text = str(e.value)
    assert message in text and len(text) < 300 and "\n" not in text


def test_the_largest_value_is_accepted_by_the_parser():
    from zomboss.workload import OpSchema, parse_spec

    wl = parse_spec(f"op:A={MAX_WORKLOAD_VALUE}", {"op": OpSchema("op", ("A",))})
    assert wl["A"] == MAX_WORKLOAD_VALUE
