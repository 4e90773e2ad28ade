"""The search, by role: the mapping space as clingo and CP-SAT see it (`space`), the guides
that decide what to simulate next (`guides`), the guided search loop (`search`), exhaustive
branch and bound (`exhaustive`) and the direct-generation baseline (`direct`). Roles import
only the roles before them in that order; no solver knows a particular machine.
"""
