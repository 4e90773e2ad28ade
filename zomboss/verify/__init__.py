"""Candidate-0 and verification modes: the compiler default lowered, simulated and verified
(`default`), and which output blocks a sampled verification checks (`sampling`). Imports the
target interface and the layers below it.
"""

from __future__ import annotations

from zomboss.verify.default import default_result, library_default
from zomboss.verify.sampling import sample_blocks, sample_json

__all__ = ["default_result", "library_default", "sample_blocks", "sample_json"]
