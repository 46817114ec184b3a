"""The Beam pipeline behind ``embed --runner``
(:mod:`bilm_keras.embedding.beam_dump`): the choice of one part per line,
and a bundle that fails after writing its part (Beam's
BundleBasedDirectRunner retries it) leaving the output exact. The
end-to-end runs on two worker processes are in
``tests/cli/test_embed_runner.py``."""

import json
import os

import h5py
import numpy as np
import pytest

from helpers import require_extra

beam = require_extra("apache_beam", "beam")

from apache_beam.ml.inference.base import RunInference  # noqa: E402

from bilm_keras.embedding import beam_dump  # noqa: E402
from bilm_keras.embedding.beam_inference import (  # noqa: E402
    BiLMModelHandler,
)
from bilm_keras.embedding.outputs import EmbeddingSpec  # noqa: E402
from bilm_keras.embedding.runs import EmbeddingRunError  # noqa: E402

LINES = ["The cat sat .", "深度 学习", "", "a b c", "The cat sat .",
         "the cat"]


def test_one_part_per_line_in_line_order():
    parts = [("b", [(2, 4)]), ("a", [(0, 2), (4, 5)]), ("c", [(3, 5)])]
    # line 3 and 4 are in two parts: the first in path order keeps them
    assert beam_dump.choose_segments(parts, 5) == [
        ("a", 0, 2), ("b", 2, 4), ("a", 4, 5)]


def test_a_lost_line_is_an_error_naming_it():
    with pytest.raises(EmbeddingRunError, match=r"2 lines in no part "
                                                r"\(1, 3\)"):
        beam_dump.choose_segments([("a", [(0, 1), (2, 3)])], 4)
    with pytest.raises(EmbeddingRunError, match="expected lines in 0..3"):
        beam_dump.choose_segments([("a", [(0, 5)])], 4)


def test_no_progress_callback_with_a_beam_runner():
    # its workers write the parts: nothing here would call it
    from bilm_keras._utils.settings import SettingError
    from bilm_keras.embedding.dump_plan import DumpSettings

    with pytest.raises(SettingError, match=r"on_event: not with a Beam "
                                           r"runner"):
        beam_dump.plan_beam_dump(
            options_file="options.json", weight_file="lm_weights.hdf5",
            vocab_file=None, dataset_file="s.txt", spec=EmbeddingSpec(),
            settings=DumpSettings(on_event=print))


class FailOnceAfterWriting(beam_dump.WriteParts):
    """Writes its part, then fails the bundle once (a worker lost after
    its write): the runner retries, the first part is an orphan."""

    def __init__(self, folder, marker):
        super().__init__(folder)
        self.marker = marker

    def finish_bundle(self):
        outputs = list(super().finish_bundle())
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("worker lost after writing its part")
        yield from outputs


@pytest.mark.slow
def test_a_retried_bundle_leaves_no_duplicate_or_gap(model_dir, tmp_path):
    from bilm_keras.embedding.dump import dump_bilm_embeddings
    from bilm_keras.embedding.dump_plan import DumpSettings

    text = tmp_path / "s.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    spec = EmbeddingSpec(output="average")
    files = dict(options_file=str(model_dir / "options.json"),
                 weight_file=str(model_dir / "lm_weights.hdf5"))
    settings = DumpSettings(chunk_size=4, progress=False)
    plan = beam_dump.plan_beam_dump(vocab_file=None, dataset_file=str(text),
                                    spec=spec, settings=settings, **files)
    assert [(r.first, r.end) for r in plan.ranges] == [(0, 4), (4, 6)]
    folder, out = tmp_path / "parts", tmp_path / "beam.hdf5"
    folder.mkdir()
    handler = BiLMModelHandler(spec=spec, batch_sentences=4, **files)
    options = beam.options.pipeline_options.PipelineOptions(
        ["--runner", "BundleBasedDirectRunner"])
    with beam.Pipeline(options=options) as p:
        _ = (p
             | beam.Create(list(plan.ranges))
             | beam.ParDo(beam_dump.ReadLines())
             | RunInference(handler.with_no_batching())
             | beam.ParDo(FailOnceAfterWriting(str(folder),
                                               str(tmp_path / "failed")))
             | beam.combiners.ToList()
             | beam.ParDo(beam_dump.MergeParts(
                 str(out), plan.plan.n_lines, plan.record.attrs,
                 plan.record.identity)))
    assert (tmp_path / "failed").exists()
    parts = os.listdir(folder)
    assert len(parts) > 1  # the failed attempt's part is still there
    plain = tmp_path / "plain.hdf5"
    dump_bilm_embeddings(None, str(text), files["options_file"],
                         files["weight_file"], str(plain), spec, settings)
    with h5py.File(out, "r") as got, h5py.File(plain, "r") as want:
        assert sorted(got) == sorted(want)
        for key in want:
            if key == "sentence_to_index":
                assert (json.loads(got[key][0])
                        == json.loads(want[key][0]))
                continue
            np.testing.assert_allclose(got[key][...], want[key][...],
                                       rtol=0, atol=1e-6)
        assert got.attrs["n_sentences"] == len(LINES)
        assert got.attrs["run_id"] == want.attrs["run_id"]
