"""A local stand-in for an OpenAI-compatible judge: chat completions and the Batch API, no dependencies."""
