"""``bilm-keras serve``: ELMo's vectors over HTTP, one module per concept.

* ``limits``: :class:`ServeLimits`, the server's limits as one value.
* ``request_parsing``: a request's JSON checked against the limits and
  the loaded models, into an :class:`EmbedRequest`, or a
  :class:`RequestError` with its HTTP status and field.
* ``served_model``: :class:`ServedModel`, a loaded model as the server
  uses it (its name, shape and one ``embed`` function), and
  :func:`load_served_models` for ``--model [NAME=]SPEC`` flags.
* ``dynamic_batcher``: :class:`DynamicBatcher`, concurrent requests'
  sentences merged into batches that run in a worker thread.
* ``array_encoding``: one sentence's array as JSON lists or base64.
* ``metrics``: the Prometheus metrics of ``/metrics``.
* ``app``: :func:`create_app`, the Starlette application and its routes.
* ``server``: :func:`serve`, the application under uvicorn, with
  SIGTERM's drain.

It needs the ``serve`` extra (Starlette, uvicorn, prometheus-client);
``docs/serving.md`` is the guide.
"""
