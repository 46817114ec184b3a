"""The server's limits, one value checked once (:class:`ServeLimits`)."""

from __future__ import annotations

import dataclasses

from bilm_keras._utils.settings import check_int


@dataclasses.dataclass(frozen=True)
class ServeLimits:
    """What the server takes and how it batches: ``bilm-keras serve``'s
    flags of the same names.

    Fields:
        max_batch_tokens: int. Positions per batch of the LSTMs, counted as
            sentences times the longest sentence plus 2. It also caps the
            tokens of the requests merged into one call of the model.
        max_wait_ms: int. How long a request waits for others to share
            its batch when the model is idle, in milliseconds.
        max_concurrent_requests: int. Requests in flight (queued or
            computing) at most. One more is answered 429.
        max_sentences: int. Sentences per request at most (413).
        max_tokens_per_sentence: int. Tokens per sentence at most (413).
        max_request_bytes: int. Bytes of a request's body at most (413).

    Example:
        >>> ServeLimits(max_wait_ms=2).max_batch_tokens
        8192
    """

    max_batch_tokens: int = 8192
    max_wait_ms: int = 5
    max_concurrent_requests: int = 256
    max_sentences: int = 256
    max_tokens_per_sentence: int = 512
    max_request_bytes: int = 4 * 1024 * 1024

    def __post_init__(self):
        check_int("max_batch_tokens", self.max_batch_tokens, 1)
        check_int("max_wait_ms", self.max_wait_ms, 0)
        check_int("max_concurrent_requests", self.max_concurrent_requests, 1)
        check_int("max_sentences", self.max_sentences, 1)
        check_int("max_tokens_per_sentence", self.max_tokens_per_sentence, 1)
        check_int("max_request_bytes", self.max_request_bytes, 1)

    def as_dict(self) -> dict:
        """The limits by name, as ``GET /info`` shows them."""
        return dataclasses.asdict(self)
