"""``bilm-keras models``: the published models it can fetch by name, and
which are in the cache (no network, no TensorFlow)."""

import os
import sys

NAME = "models"
ALIAS = "list_models.py"
HELP = "list the published models (by name, for --model), and which are " \
       "cached"
NEEDS_TENSORFLOW = False
DESCRIPTION = """\
List the published ELMo models that --model, --init_model and
BidirectionalLanguageModel.from_pretrained(NAME) take by name: AllenNLP's
English models, ELMoForManyLangs' 44 languages, NLPL's, DeepPavlov's,
TF-Hub's, PaddlePaddle's and more (a foreign format converted once, when
first used, with none of its framework needed). For each: its
language (ISO 639-1 code, else 639-3), its parameters in millions where
the publisher states them, the size of its download in MB where it is
known, its format, and whether it is in the cache with its size on disk
("-": not stated).

The cache is $BILM_KERAS_CACHE (default $XDG_CACHE_HOME/bilm_keras, else
~/.cache/bilm_keras); a cached model is used with no network access.
$BILM_KERAS_MODEL_MIRROR=BASE fetches every model from a mirror with the
same paths. Nothing is downloaded here; docs/pretrained-models.md has each
model's source, license and citation."""
EPILOG = """\
examples:
  bilm-keras models
  bilm-keras models --cached
  bilm-keras models --markdown
then use one by name, e.g. `bilm-keras embed --model manylangs-zh ...`."""


def add_arguments(parser):
    parser.add_argument("--cached", action="store_true",
                        help="only the models in the cache")
    parser.add_argument("--markdown", action="store_true",
                        help="print the registry as the Markdown table of "
                             "docs/pretrained-models.md, with each source's "
                             "license and citation (no cache state)")


def check(args) -> None:
    pass  # nothing to check: the registry ships with the package


def _megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


#: the table's columns: header, and whether its cells align right
COLUMNS = (("NAME", False), ("CODE", False), ("LANGUAGE", False),
           ("PARAMETERS", True), ("DOWNLOAD", True), ("FORMAT", False),
           ("CACHED", False))

#: what the table's size columns hold (printed under it)
LEGEND = ("PARAMETERS: millions, as published; DOWNLOAD: what the first "
          "use fetches; CACHED: on disk; -: not stated")


def _figure(value, unit: str) -> str:
    return "-" if value is None else f"{value:,g} {unit}"


def format_table(listed) -> list:
    """The lines of the table of ``listed``
    (:class:`~bilm_keras.pretrained.ListedModel` rows), header first."""
    rows = [tuple(name for name, _ in COLUMNS)]
    for entry in listed:
        model = entry.model
        cached = ("no" if not entry.cached
                  else _megabytes(entry.cached_bytes))
        rows.append((model.name, model.language_code, model.language,
                     _figure(model.parameters_millions, "M"),
                     _figure(model.download_megabytes, "MB"),
                     model.format, cached))
    last = len(COLUMNS) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    return ["  ".join(cell.rjust(width) if COLUMNS[i][1]
                      else cell.ljust(width)
                      for i, (cell, width) in enumerate(zip(row, widths)))
            + "  " + row[last] for row in rows]


def registry_markdown(models) -> str:
    """The table of ``models`` (:class:`~bilm_keras.pretrained.
    RegisteredModel` rows, in order) and, per source, its models, license
    and citation, in Markdown: what docs/pretrained-models.md holds
    between its ``registry`` markers (a test keeps the two equal)."""
    lines = ["| Name | Language | Code | Format | Parameters | Trained on |",
             "|---|---|---|---|---:|---|"]
    groups = {}
    for model in models:
        params = ("-" if model.parameters_millions is None
                  else f"{model.parameters_millions:g} M")
        lines.append(f"| `{model.name}` | {model.language} | "
                     f"{model.language_code} | {model.format} | {params} | "
                     f"{model.description} |")
        key = (model.source, model.license, model.citation, model.note)
        groups.setdefault(key, []).append(model.name)
    lines.append("")
    for (source, license_, citation, note), names in groups.items():
        shown = ", ".join(f"`{name}`" for name in names)
        lines += [f"* {shown}", f"  * source: {source}",
                  f"  * license: {license_}", f"  * cite: {citation}"]
        if note:
            lines.append(f"  * note: {note}")
        aliases = [f"`{alias}` (`{model.name}`)" for model in models
                   if model.name in names for alias in model.aliases]
        if aliases:
            lines.append(f"  * also named: {', '.join(aliases)}")
    return "\n".join(lines) + "\n"


def run(args) -> list:
    from bilm_keras.pretrained import CACHE_ENV, default_cache_dir, list_models

    if args.markdown:
        from bilm_keras.pretrained import registered_models

        models = list(registered_models().values())
        print(registry_markdown(models), end="")
        return models
    cache = default_cache_dir()
    listed = list_models(cache_dir=cache)
    cached = [entry for entry in listed if entry.cached]
    shown = cached if args.cached else listed
    lines = format_table(shown) if shown else ["no model is cached"]
    total = sum(entry.cached_bytes for entry in cached)
    lines += [LEGEND] if shown else []
    lines += ["", f"{len(listed)} models; {len(cached)} cached "
                  f"({_megabytes(total)}) in {cache} (${CACHE_ENV})",
              "use one: bilm-keras embed --model NAME ..., or "
              "BidirectionalLanguageModel.from_pretrained(NAME)"]
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:  # `bilm-keras models | head`: not an error
        # Python's advice: point stdout elsewhere so that its flush at
        # exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return shown
