"""``bilm-keras embed --runner RUNNER``: a whole sentence file embedded by
an Apache Beam pipeline.

The input may also be a glob of files, on any Beam file system. The output
is the same HDF5 file as ``bilm-keras embed`` writes
(:func:`~bilm_keras.dump_bilm_embeddings`). It has datasets by line
number, ``sentence_to_index`` and the same attributes.

The pipeline::

    line ranges (chunk_size lines each, cut from line 0 as embed's chunks)
      | Reshuffle                       spread over the workers
      | ReadLines                       each range: one batch of
                                        ((line, text), tokens)
      | RunInference(BiLMModelHandler)  the model once per worker process;
                                        each range embedded as one chunk
      | WriteParts                      each bundle's lines into one part,
                                        OUT.beam-XXXX/part-<uuid>.hdf5
      | ToList | Merge                  one worker: one part per line, the
                                        file through HDF5's object copy

The output stays exact when a worker fails. A part is written under a name
no other attempt uses, and only the parts named by *committed*
``WriteParts`` outputs are merged. A runner retries a failed bundle,
discarding its output, and commits each bundle's output once. So the merge
sees every line in exactly one part. A part left by a failed attempt is
named by no output, ignored, and removed with the folder. The merge checks
that every line is there once. A gap or a second copy is an error naming
the lines, and nothing is written. Each range is embedded as one chunk,
sorted and cut into compute batches as ``embed`` cuts the same lines. So
the vectors are the ones ``embed`` writes.

Needs ``apache-beam``, the ``beam`` extra.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import uuid
from collections.abc import Sequence
from typing import Optional

import apache_beam as beam
import h5py
import numpy as np
from apache_beam.ml.inference.base import RunInference
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from bilm_keras._utils.atomic_files import atomic_path
from bilm_keras._utils.problem_list import name_list
from bilm_keras._utils.settings import SettingError
from bilm_keras.data.sentence_file import (
    check_not_empty,
    check_sentence_key,
)
from bilm_keras.embedding import beam_files
from bilm_keras.embedding.beam_inference import BiLMModelHandler
from bilm_keras.embedding.dump_plan import (
    DumpPlan,
    DumpRecord,
    DumpSettings,
    dump_record,
    plan_dump,
)
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.embedding.runs import (
    EmbeddingRunError,
    copy_line_segments,
    open_hdf5,
    run_id,
    sentence_index,
    write_index_and_attrs,
)


class BeamSetupError(ValueError):
    """A runner or a Beam pipeline option that Beam rejects (one line)."""


# ------------------------------------------------------------ the options
def pipeline_options(runner: str, flags: Sequence[str]) -> PipelineOptions:
    """Beam's options for ``runner`` and the command's other ``flags``
    (``--direct_num_workers 2``, ``--project P``, ...), checked the way
    Beam would check them, but as one line each.

    Raises:
        BeamSetupError: an unknown runner (Beam's list named), a flag no
            Beam option knows, a value Beam's parser rejects.
    """
    from apache_beam.runners.runner import create_runner

    flags = list(flags)
    options = PipelineOptions(flags + ["--runner", runner])
    parsers = []
    message = io.StringIO()
    quiet = logging.getLogger("apache_beam.options.pipeline_options")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(message):
            options.get_all_options(add_extra_args_fn=parsers.append)
            _, unknown = parsers[0].parse_known_args(flags)
    except SystemExit:
        lines = [line for line in message.getvalue().splitlines()
                 if ": error: " in line]
        reason = (lines[-1].split(": error: ", 1)[1] if lines
                  else message.getvalue().strip())
        raise BeamSetupError(f"Beam option: {reason}") from None
    finally:
        quiet.setLevel(level)
    if unknown:
        raise BeamSetupError(
            f"unrecognized arguments: {' '.join(unknown)} (not an option of "
            f"embed, nor of Beam's PipelineOptions)")
    try:
        create_runner(runner)
    except ValueError as e:
        raise BeamSetupError(f"--runner {runner}: {e}") from None
    except ImportError as e:
        raise BeamSetupError(
            f"--runner {runner}: needs more of Beam than is installed "
            f"({e}); e.g. pip install 'apache-beam[gcp]' for "
            f"DataflowRunner") from None
    return options


# ---------------------------------------------------------------- the plan
@dataclasses.dataclass(frozen=True)
class LineRange:
    """Lines ``[first, end)`` of the input, in global numbers: one chunk.

    It is read from ``segments``, each ``(path, byte offset, 1-based line
    number in that file, count)``. A chunk may span files of a glob."""

    first: int
    end: int
    segments: tuple


@dataclasses.dataclass(frozen=True)
class BeamDumpPlan:
    """A Beam dump's inputs, checked (:func:`plan_beam_dump`).

    Attributes:
        plan: as ``embed``'s (:class:`~bilm_keras.embedding.dump_plan.
            DumpPlan`).
        record: the output's identity and attributes, as ``embed``'s.
        ranges: the chunks, each a work item of the pipeline.
        n_files: input files matched.
    """

    plan: DumpPlan
    record: DumpRecord
    ranges: tuple
    n_files: int


def plan_beam_dump(
    *,
    options_file: str,
    weight_file: str,
    vocab_file: Optional[str],
    dataset_file: str,
    spec: EmbeddingSpec,
    settings: DumpSettings,
) -> BeamDumpPlan:
    """Everything of a Beam dump that needs no model, on the machine that
    starts it.

    It checks that the model files are there. It reads the input once, a
    path or a glob on any Beam file system, as ``embed`` reads it: UTF-8,
    at least one token, keys by sentence. It counts the lines and cuts
    them into chunks.

    Raises:
        SentenceFileError, OptionsError, SettingError: as
            :func:`~bilm_keras.embedding.dump_plan.plan_dump`. Also
            ``resume`` or ``shard``, since the runner retries failed work
            and splits the input itself, and an ``alignment``.
        FileNotFoundError: a model file that is not there.
    """
    for name in ("resume", "shard"):
        if getattr(settings, name):
            raise SettingError(name, "not with a Beam runner (it retries "
                                     "failed work and splits the input "
                                     "itself)")
    if settings.on_event is not None:
        raise SettingError("on_event", "not with a Beam runner (its "
                                       "workers write the parts)")
    if settings.alignment:
        raise SettingError("alignment", "not with a Beam runner (its "
                                        "workers map no layers)")
    embedding_weight_file = settings.embedding_weight_file
    chunk_size = settings.chunk_size
    for name, path in (("weight_file", weight_file),
                       ("embedding_weight_file", embedding_weight_file)):
        if path is not None and not beam_files.exists(path):
            raise FileNotFoundError(f"{name} {path}: no such file")
    scratch = beam_files.scratch_folder()
    files = beam_files.match_files(dataset_file)
    ranges, n_lines, n_tokens = [], 0, 0
    first_line = {}  # keys by sentence: text -> line number
    segments, start = [], 0
    for matched in files:
        segment = None  # (path, offset, line in file, count)
        for lineno, offset, line in beam_files.read_lines(matched.path):
            if segment is None:
                segment = [matched.path, offset, lineno, 0]
            segment[3] += 1
            n_lines += 1
            n_tokens += len(line.split())
            if settings.use_sentence_keys:
                check_sentence_key(beam_files.local_path(matched.path),
                                   n_lines, line.strip(), first_line)
            if n_lines - start == chunk_size:
                segments.append(tuple(segment))
                ranges.append(LineRange(start, n_lines, tuple(segments)))
                segments, start, segment = [], n_lines, None
        if segment is not None:
            segments.append(tuple(segment))
    if segments:
        ranges.append(LineRange(start, n_lines, tuple(segments)))
    check_not_empty(beam_files.local_path(dataset_file), n_lines=n_lines,
                    n_tokens=n_tokens)
    plan = plan_dump(
        options_file=beam_files.local_copy(options_file, scratch),
        weight_file=weight_file,
        vocab_file=(None if vocab_file is None
                    else beam_files.local_copy(vocab_file, scratch)),
        dataset_file=dataset_file, spec=spec, settings=settings,
        checked_lines=n_lines)
    record = dump_record(
        plan, spec, settings, options_file=options_file,
        weight_file=weight_file, vocab_file=vocab_file,
        dataset_file=dataset_file, fingerprint=beam_files.fingerprint)
    return BeamDumpPlan(plan=plan, record=record, ranges=tuple(ranges),
                        n_files=len(files))


# ------------------------------------------------------------ the pipeline
class ReadLines(beam.DoFn):
    """A :class:`LineRange` -> one batch: ``((line, text), tokens)`` for
    each of its lines, in order (``text``: the line stripped)."""

    def process(self, line_range: LineRange):
        batch = []
        number = line_range.first
        for path, offset, lineno, count in line_range.segments:
            lines = beam_files.read_lines(path, offset=offset,
                                          first_line=lineno)
            for _, (_, _, line) in zip(range(count), lines):
                batch.append(((number, line.strip()), line.split()))
                number += 1
        yield batch


class WriteParts(beam.DoFn):
    """``((line, text), array)`` -> the bundle's lines in one part file.

    The part is ``folder/part-<uuid>.hdf5``, a name no other attempt uses.
    At the bundle's end it emits ``(part path, [(a, b), ...])``, the runs
    of lines it holds."""

    def __init__(self, folder: str):
        self.folder = folder

    def start_bundle(self):
        self._path = self._local = self._file = None
        self._lines, self._texts = [], []

    def process(self, element):
        (line, text), array = element
        if self._file is None:
            name = f"part-{uuid.uuid4().hex}.hdf5"
            self._path = beam_files.join(self.folder, name)
            self._local = (beam_files.local_path(self._path)
                           if beam_files.is_local(self._path)
                           else os.path.join(beam_files.scratch_folder(),
                                             name))
            self._file = h5py.File(self._local, "w")
        self._file.create_dataset(str(line), data=array)
        self._lines.append(int(line))
        self._texts.append(text)

    def finish_bundle(self):
        if self._file is None:
            return
        with self._file as f:
            f.create_dataset("lines", data=np.asarray(self._lines, np.int64))
            f.create_dataset("texts", data=self._texts,
                             dtype=h5py.string_dtype())
        if not beam_files.is_local(self._path):
            beam_files.upload(self._local, self._path)
        yield WindowedValue((self._path, _runs(sorted(self._lines))), 0,
                            [GlobalWindow()])
        self._file = None

    def teardown(self):
        if self._file is not None:  # a failed bundle's part: an orphan
            self._file.close()


def _runs(lines: list[int]) -> list[tuple[int, int]]:
    """Sorted line numbers as runs ``[a, b)`` of consecutive lines."""
    runs = []
    for i in lines:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return [tuple(r) for r in runs]


def choose_segments(parts: Sequence[tuple[str, Sequence[tuple[int, int]]]],
                    n_lines: int) -> list[tuple[str, int, int]]:
    """The committed parts -> ``(path, a, b)`` segments covering lines
    ``0 .. n_lines - 1`` once each, in line order.

    Two parts hold a line when a runner committed a retried bundle twice.
    That line is taken from the first part in path order.

    Raises:
        EmbeddingRunError: lines that no part holds (named), or lines out
            of range.
    """
    owner = np.full(n_lines, -1, np.int64)  # line -> index into parts
    parts = sorted(parts)
    for k, (_, runs) in enumerate(parts):
        for a, b in runs:
            if not 0 <= a < b <= n_lines:
                raise EmbeddingRunError(
                    f"a part holds lines {a}..{b - 1}, expected lines in "
                    f"0..{n_lines - 1}")
            free = owner[a:b] < 0
            owner[a:b][free] = k
    missing = np.flatnonzero(owner < 0)
    if len(missing):
        raise EmbeddingRunError(
            f"{len(missing)} line{'s' * (len(missing) > 1)} in no part "
            f"({name_list(missing, most=10)}): the runner "
            f"lost work; nothing written")
    segments = []
    for i in range(n_lines):
        if segments and segments[-1][0] == owner[i]:
            segments[-1][2] = i + 1
        else:
            segments.append([int(owner[i]), i, i + 1])
    return [(parts[k][0], a, b) for k, a, b in segments]


class MergeParts(beam.DoFn):
    """Every committed part -> the output file (one worker): one part per
    line (:func:`choose_segments`), datasets copied in line order through a
    temporary file renamed (or uploaded) onto ``outfile``."""

    def __init__(self, outfile: str, n_lines: int, attrs: dict,
                 identity: dict):
        self.outfile = outfile
        self.n_lines = n_lines
        self.attrs = attrs
        self.identity = identity

    def process(self, parts):
        segments = choose_segments(parts, self.n_lines)
        scratch = beam_files.scratch_folder()
        local = {}
        if not all(beam_files.is_local(path) for path, _, _ in segments):
            local = {path: beam_files.local_copy(path, scratch)
                     for path in {path for path, _, _ in segments}}
        segments = [(local.get(path, beam_files.local_path(path)), a, b)
                    for path, a, b in segments]
        if beam_files.is_local(self.outfile):
            target = beam_files.local_path(self.outfile)
        else:
            target = os.path.join(scratch, f"merged-{uuid.uuid4().hex}.hdf5")
        with atomic_path(target) as tmp, open_hdf5(tmp, "w") as fout:
            by_text = self.attrs["keys"] == "sentence"
            n, index_json = sentence_index(copy_line_segments(
                fout, segments, by_text=by_text), by_text=by_text)
            write_index_and_attrs(fout, index_json, {
                **self.attrs, "n_sentences": n,
                "run": json.dumps(self.identity, sort_keys=True),
                "run_id": run_id(self.identity)})
        if not beam_files.is_local(self.outfile):
            beam_files.upload(target, self.outfile)
        yield n


# bilm-tf's five arguments, then the pipeline's options, the two values
# (spec, settings) and the model / plan a caller may have resolved already
def dump_bilm_embeddings_with_beam(
    vocab_file: Optional[str],
    dataset_file: str,
    options_file: str,
    weight_file: str,
    outfile: str,
    *,
    pipeline_options: PipelineOptions,
    spec: EmbeddingSpec = EmbeddingSpec(),
    settings: DumpSettings = DumpSettings(progress=False),
    model: Optional[str] = None,
    plan: Optional[BeamDumpPlan] = None,
) -> int:
    """:func:`~bilm_keras.dump_bilm_embeddings` as a Beam pipeline.

    It writes the same file, by the runner of ``pipeline_options``. The
    module doc has the pipeline and why the output stays exact.

    Args:
        dataset_file: a path or a glob, on any Beam file system. A glob's
            files are read in path order, their lines numbered on from
            file to file.
        outfile: the output, on any Beam file system. Its parts go to a
            folder beside it, ``OUT.beam-XXXXXXXX/``, removed at the end,
            also on failure.
        pipeline_options: Beam's options (:func:`pipeline_options`), the
            runner and its settings.
        model: a published model's name, URL or archive for the workers to
            resolve, as
            :class:`~bilm_keras.embedding.beam_inference.BiLMModelHandler`
            does. The file attributes still name ``options_file`` and
            ``weight_file``, its files on this machine.
        plan: the checks' result, if the caller made them already
            (:func:`plan_beam_dump`).
        vocab_file, options_file, weight_file, spec, settings: as
            :func:`~bilm_keras.dump_bilm_embeddings`. ``settings`` may not
            set ``resume``, ``shard`` or ``on_event``. ``progress`` is the
            runner's.

    Returns:
        The number of sentences written.
    """
    if plan is None:
        plan = plan_beam_dump(
            options_file=options_file, weight_file=weight_file,
            vocab_file=vocab_file, dataset_file=dataset_file, spec=spec,
            settings=settings)
    batch_size, chunk_size, devices = (
        settings.batch_size, settings.chunk_size, settings.devices)
    if beam_files.is_local(outfile):
        outfile = os.path.abspath(beam_files.local_path(outfile))
    folder = f"{outfile}.beam-{uuid.uuid4().hex[:8]}"
    if model is not None:
        handler = BiLMModelHandler(
            model, vocab_file=vocab_file, spec=spec, batch_size=batch_size,
            devices=devices, batch_sentences=chunk_size,
            precision=settings.precision)
    else:
        handler = BiLMModelHandler(
            options_file=_absolute(options_file),
            weight_file=_absolute(weight_file),
            vocab_file=_absolute(vocab_file),
            embedding_weight_file=_absolute(settings.embedding_weight_file),
            spec=spec, batch_size=batch_size, devices=devices,
            batch_sentences=chunk_size, precision=settings.precision)
    if beam_files.is_local(folder):
        os.makedirs(folder)
    try:
        with beam.Pipeline(options=pipeline_options) as p:
            _ = (p
                 | "LineRanges" >> beam.Create(list(plan.ranges))
                 | "Spread" >> beam.Reshuffle()
                 | "ReadLines" >> beam.ParDo(ReadLines())
                 # one range = one batch: embed's chunk, sorted as embed
                 # sorts it
                 | "Embed" >> RunInference(handler.with_no_batching())
                 | "WriteParts" >> beam.ParDo(WriteParts(folder))
                 | "AllParts" >> beam.combiners.ToList()
                 | "Merge" >> beam.ParDo(MergeParts(
                     outfile, plan.plan.n_lines, plan.record.attrs,
                     plan.record.identity)))
    finally:
        beam_files.remove_tree(folder)
    return plan.plan.n_lines


def _absolute(path: Optional[str]) -> Optional[str]:
    """A local path made absolute, since the workers' working folder may
    be another. A URL stays as it is."""
    if path is None or not beam_files.is_local(path):
        return path
    return os.path.abspath(beam_files.local_path(path))

