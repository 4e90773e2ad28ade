"""The OpenAI-compatible chat transport shared by the LLM guide and the direct baseline:
configuration, bounded retries, token accounting, record and replay (`client`). Imports only
`zomboss.errors`; what is asked and how answers are parsed belongs to the solvers.
"""

from __future__ import annotations

from zomboss.llm.client import (
    LlmClient,
    LlmConfig,
    LlmConfigError,
    LlmError,
    LlmRefused,
    ReplayMismatch,
    Reply,
    ToolCall,
    Usage,
    open_client,
)

__all__ = [
    "LlmClient",
    "LlmConfig",
    "LlmConfigError",
    "LlmError",
    "LlmRefused",
    "ReplayMismatch",
    "Reply",
    "ToolCall",
    "Usage",
    "open_client",
]
