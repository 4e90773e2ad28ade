"""Every parameter of every installed target declares its domain in its doc (issue #29,
item 12), and the overrides of the issue's reproductions are refused with it."""

from __future__ import annotations

import pytest

from zomboss.app import main
from zomboss.doc import parse_doc
from zomboss.target import doc_for, target_names


@pytest.mark.parametrize("target", target_names())
def test_every_parameter_has_a_domain(target):
    path = doc_for(target)
    doc = parse_doc(path.read_text(), str(path))
    missing = [p.name for p in doc.params if p.lo is None or p.hi is None]
    assert not missing, f"{target}: parameters without a domain (param NAME in LO..HI = ...): {missing}"


@pytest.mark.parametrize(
    ("target", "workload", "params", "message"),
    [
        # a kernel of 6,197 cycles "verified" below its own lower bound of 8,192
        ("vta", "dense_128", ["dma_setup=-1000000000", "gemm_fill=-1000000000"], "--param dma_setup=-1000000000: "),
        ("vta", "dense_128", ["bus_bytes=-8"], "--param bus_bytes=-8: outside the domain of bus_bytes, 1..4096 ("),
        ("vta", "dense_128", ["bus_bytes=0"], "--param bus_bytes=0: outside the domain of bus_bytes, 1..4096 ("),
        ("vta", "dense_128", ["alu_ii=0"], "--param alu_ii=0: outside the domain of alu_ii, 1..1024 ("),
        ("vta", "dense_128", ["cmd_depth=0"], "--param cmd_depth=0: outside the domain of cmd_depth, 1.."),
        ("gemmini", "mm256", ["rs_ld=0"], "--param rs_ld=0: outside the domain of rs_ld, 1..1024 ("),
        ("plena", "rms_4x384", ["hbm_block=0"], "--param hbm_block=0: outside the domain of hbm_block, 1..4096 ("),
    ],
)
def test_overrides_outside_their_domain_are_refused(target, workload, params, message, capsys):
    argv = ["default", target, workload]
    for p in params:
        argv += ["--param", p]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {message}") and f"{target}.md:" in err and err.count("\n") == 1


def test_a_huge_param_value_is_refused_unread_in_one_short_line(capsys):
    """Issue #29, item 17 for `--param`: a 5,000-digit value was echoed whole."""
    assert main(["default", "vta", "dense_128", "--param", "dma_setup=" + "9" * 5000]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zomboss: --param 'dma_setup=9999") and "(5,010 characters)" in err and len(err) < 300
