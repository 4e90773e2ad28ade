"""The mapping space as the solvers see it: clingo's skeletons (`enumerate`), the CP-SAT
translation of doc expressions (`cpsat`), integer sizing per skeleton (`sizing`), the
screen that sizes every cost class at once (`screen`), the candidate pool of cost classes (`pool`) and the `zomboss space` summary (`summary`).
"""

from __future__ import annotations

from zomboss.solvers.space.cpsat import Translator
from zomboss.solvers.space.enumerate import Skeleton, skeletons
from zomboss.solvers.space.pool import Candidate, CostClass, Pool, build_pool, cost_relevant, distance, fixed_bound
from zomboss.solvers.space.sizing import SizingModel, group_skeletons
from zomboss.solvers.space.summary import describe_space

__all__ = [
    "Candidate",
    "CostClass",
    "Pool",
    "SizingModel",
    "Skeleton",
    "Translator",
    "build_pool",
    "cost_relevant",
    "describe_space",
    "distance",
    "fixed_bound",
    "group_skeletons",
    "skeletons",
]
