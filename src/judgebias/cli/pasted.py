"""Credentials typed on the command line, refused before Hydra prints or saves the overrides.

Hydra writes every override into `.hydra/overrides.yaml` and `hydra.yaml` before the job starts, and a sweep's
launcher prints each job's overrides on stdout; a key pasted where the NAME of its variable belongs, or a password
inside `judge.base_url`, would be in both. These checks run first and never echo the value they refuse.
"""

from __future__ import annotations

from judgebias.cli.rundir import unquoted
from judgebias.config.checks import is_variable_name
from judgebias.core.redaction import looks_like_secret, url_password, url_query_secrets, url_secrets

NAME_KEYS = ("api_key_env", "url_env")  # settings that take the name of an environment variable


def looks_keyed(url: str) -> bool:
    """Whether a URL's query holds a value shaped like a key (AIza..., sk-...), whatever the parameter's name."""
    _, _, query = url.partition("?")
    return any(looks_like_secret(part.partition("=")[2]) for part in query.split("&") if "=" in part)


def pasted_secret_error(argv: list[str]) -> str | None:
    """Why an override on the command line holds a credential itself, or None (the value is never repeated)."""
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, _, value = arg.partition("=")
        key = key.lstrip("+~")
        leaf = key.rpartition(".")[2]
        choices = [unquoted(choice) for choice in value.split(",")]  # a sweep's list of values
        if leaf in NAME_KEYS or ".extra_headers." in f".{key}":
            for choice in choices:
                if choice in ("", "null") or "${" in choice:
                    continue
                if not is_variable_name(choice):
                    example = "JUDGEBIAS_REDIS_URL" if leaf == "url_env" else "OPENAI_API_KEY"
                    return (
                        f"{key} takes the NAME of an environment variable (e.g. {example}), and the value given "
                        "looks like a credential itself (it is not shown): put it in a variable and name that, e.g. "
                        f"export MY_SECRET=... and {key}=MY_SECRET"
                    )
        elif leaf == "base_url" and any(url_query_secrets(choice) or looks_keyed(choice) for choice in choices):
            return (
                f"{key} holds a key in its query string (e.g. ?key=...; it is not shown): put the URL in an "
                f"environment variable and pass {key}='${{oc.env:MY_JUDGE_URL}}', so it is never printed or saved "
                "(or send the key as a header: judge.extra_headers)"
            )
        elif leaf == "base_url" and any(set(url_secrets(choice)) - {url_password(choice)} for choice in choices):
            return (
                f"{key} holds a key in its path (a part shaped like a credential; it is not shown): put the URL in an "
                f"environment variable and pass {key}='${{oc.env:MY_JUDGE_URL}}', so it is never printed or saved "
                "(or send the key as a header: judge.extra_headers)"
            )
        elif leaf == "base_url" and any(url_password(choice) for choice in choices):
            return (
                f"{key} holds a password (user:password@ in the URL; it is not shown): put the URL in an environment "
                f"variable and pass {key}='${{oc.env:MY_JUDGE_URL}}', so it is never printed or saved"
            )
    return None
