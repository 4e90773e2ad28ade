"""Whole networks (`zomboss compile`): an ONNX graph read with its shapes (`graph`), the op
families a target offers recognised by their shape keys (`families`), the graph's operators
mapped to those families' workloads with every unmapped operator kept and said (`layers`), the
built-in networks generated with onnx.helper (`builtin`), and the network's answer: per-layer
and total cycles, its text, Markdown and plot (`answer`).

It sits above the search and below the application: it reads targets (their op families and
workload specs) and result records, but it runs no search and opens no results store; the
application (`zomboss.app.compile`) solves the distinct layers and hands the payloads back here.
It names no target: a target's families are found by the keys of their workload schemas.
"""
