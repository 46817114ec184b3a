"""``bilm-keras serve``: ELMo's vectors over HTTP (the ``serve`` extra)."""

import argparse
import dataclasses
import sys

from bilm_keras.cli._common import (
    CommandError,
    check_file,
    field_default,
    finite_float,
    int_in_range,
    non_negative_int,
    positive_int,
)
from bilm_keras.cli._model_flags import SPEC_HELP

NAME = "serve"
ALIAS = "serve.py"
#: the library setting of a flag whose name is not the flag's
FLAGS = {"drain_timeout_s": "--drain_timeout"}
HELP = "serve ELMo's vectors over HTTP (an OpenAI-compatible route and " \
       "ELMo per token)"
DESCRIPTION = """\
Serve one or more models over HTTP until SIGTERM or Ctrl-C: POST
/v1/embeddings (OpenAI's embeddings API: a sentence vector per input
string), POST /v1/elmo (ELMo per token, each sentence's array exactly as
embed gives it), GET /health, /info and /metrics (Prometheus).

Concurrent requests' sentences are merged into batches of at most
--max_batch_tokens positions; a request waits at most --max_wait_ms for
company when the model is idle. Over --max_concurrent_requests a request
is answered 429 with Retry-After; over --max_sentences,
--max_tokens_per_sentence or --max_request_bytes, 413 naming the limit.
SIGTERM answers new requests 503, finishes those in flight and exits 0.

It listens on 127.0.0.1 (this machine only) unless --host says
otherwise; with --api_key_file every route but /health asks for
`Authorization: Bearer KEY`. A request names a model by its name only:
nothing a request holds reaches the file system. Needs the serve extra
(pip install 'bilm_keras[serve]'); docs/serving.md is the guide."""
EPILOG = """\
examples:
  bilm-keras serve --model elmo-original
  bilm-keras serve --model en=elmo-original --model zh=manylangs-zh \\
      --port 8080 --api_key_file key.txt
then:
  curl -s localhost:8080/v1/embeddings -H 'Content-Type: application/json' \\
      -d '{"model": "en", "input": ["The cat sat ."]}'"""

#: the flags of ServeLimits' fields, with their types
_LIMITS = {
    "max_batch_tokens": (positive_int, "positions per batch of the LSTMs "
                                       "(sentences x (longest + 2)), and "
                                       "per call of the model"),
    "max_wait_ms": (non_negative_int, "how long a request waits for others "
                                      "to share its batch when the model "
                                      "is idle"),
    "max_concurrent_requests": (positive_int, "requests queued or "
                                              "computing at most; one more "
                                              "gets 429"),
    "max_sentences": (positive_int, "sentences per request at most (413)"),
    "max_tokens_per_sentence": (positive_int, "tokens per sentence at most "
                                              "(413)"),
    "max_request_bytes": (positive_int, "bytes of a request body at most "
                                        "(413)"),
}


def served_model_flag(text: str) -> str:
    """An argparse ``type``: ``[NAME=]SPEC``, the SPEC's kind checked
    without the network."""
    from bilm_keras.pretrained import PretrainedModelError, check_model_spec
    from bilm_keras.serving.model_names import parse_model_flag

    try:
        _, spec = parse_model_flag(text)
        check_model_spec(spec)
    except (ValueError, PretrainedModelError) as e:
        raise argparse.ArgumentTypeError(
            str(e).removeprefix("--model: ")) from None
    return text


def add_arguments(parser):
    from bilm_keras.serving.limits import ServeLimits

    parser.add_argument("--model", type=served_model_flag, action="append",
                        required=True, metavar="[NAME=]SPEC",
                        help=f"a model to serve, repeatable: {SPEC_HELP}; "
                             "requests name it NAME, by default its "
                             "registry name or its folder's name")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (0.0.0.0: every "
                             "interface; put a proxy with TLS in front)")
    parser.add_argument("--port", type=int_in_range(0, 65535), default=8080,
                        help="the port (0: a free one, printed)")
    for name, (kind, text) in _LIMITS.items():
        parser.add_argument(f"--{name}", type=kind,
                            default=field_default(ServeLimits, name),
                            help=text)
    parser.add_argument("--api_key_file", default=None,
                        help="a file holding the key that every route but "
                             "/health asks for as 'Authorization: Bearer "
                             "KEY'")
    parser.add_argument("--drain_timeout", type=finite_float, default=30.0,
                        help="seconds SIGTERM waits for the requests in "
                             "flight")


@dataclasses.dataclass(frozen=True)
class ServeJob:
    """The checked flags and the API key read from ``--api_key_file``."""

    args: argparse.Namespace
    api_key: object = None


def check(args) -> ServeJob:
    from bilm_keras.serving.limits import ServeLimits

    if args.drain_timeout < 0:
        raise CommandError(f"--drain_timeout: expected a number >= 0, found "
                           f"{args.drain_timeout}")
    ServeLimits(**{name: getattr(args, name) for name in _LIMITS})
    _check_models(args.model)
    api_key = None
    if args.api_key_file is not None:
        check_file(args.api_key_file, "--api_key_file")
        with open(args.api_key_file, encoding="utf-8") as f:
            api_key = f.read().strip()
        if not api_key or any(c.isspace() for c in api_key):
            raise CommandError(f"--api_key_file {args.api_key_file}: "
                               f"expected one key on one line, found "
                               f"{'nothing' if not api_key else 'spaces'}")
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
        import prometheus_client  # noqa: F401
    except ImportError as e:
        raise CommandError(f"serve needs the serve extra (pip install "
                           f"'bilm_keras[serve]'): {e}") from None
    return ServeJob(args, api_key)


def _check_models(flags) -> None:
    """Refuses, before any download, a registered model that cannot be
    served: serve takes no vocabulary, which a word-input model needs."""
    from bilm_keras.pretrained import check_before_download
    from bilm_keras.serving.model_names import parse_model_flag

    for flag in flags:
        check_before_download(parse_model_flag(flag)[1], vocab_given=False,
                              vocab_flag=None)


def run(job: ServeJob) -> None:
    from bilm_keras.serving.app import create_app
    from bilm_keras.serving.limits import ServeLimits
    from bilm_keras.serving.server import serve
    from bilm_keras.serving.served_model import load_served_models

    args = job.args
    limits = ServeLimits(**{name: getattr(args, name) for name in _LIMITS})
    models = load_served_models(args.model,
                                max_batch_tokens=limits.max_batch_tokens)
    app = create_app(models, limits, api_key=job.api_key)

    def listening(url):
        if not args.quiet:
            print(f"serving {', '.join(models)} on {url} (SIGTERM or Ctrl-C "
                  f"stops it)", flush=True)

    received, answered = serve(app, host=args.host, port=args.port,
                               drain_timeout_s=args.drain_timeout,
                               on_listening=listening)
    if not args.quiet:
        print(f"stopped: {received} requests received, {answered} "
              f"answered", file=sys.stderr, flush=True)
    return received, answered
