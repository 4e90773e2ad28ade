"""The OpenAI-compatible chat transport shared by the LLM guide and the direct baseline:
configuration, bounded retries (the openai client's own, plus what it cannot see), token
accounting, record and replay (`client`). The openai package is the optional `llm` extra:
without it a client says which to install (`LlmMissing`). Imports only `zomboss.errors`; what
is asked and how answers are parsed belongs to the solvers.
"""

from __future__ import annotations

from zomboss.llm.client import (
    LlmClient,
    LlmConfig,
    LlmConfigError,
    LlmError,
    LlmMissing,
    LlmRefused,
    ReplayMismatch,
    Reply,
    ToolCall,
    Usage,
    http_url,
    open_client,
)

__all__ = [
    "LlmClient",
    "LlmConfig",
    "LlmConfigError",
    "LlmError",
    "LlmMissing",
    "LlmRefused",
    "http_url",
    "ReplayMismatch",
    "Reply",
    "ToolCall",
    "Usage",
    "open_client",
]
