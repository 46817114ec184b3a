"""Cross-lingual alignment matrices: MUSE's ``torch.save`` of a numpy array
read equal to what numpy saved, a hostile ``.pth`` refused in one line
with nothing run, a matrix of the wrong shape named with its file and
both shapes, and the facade's aligned layers equal to numpy's
``layers @ W.T`` (the product the publishers' demo.py computes)."""

import io
import pathlib
import pickle
import zipfile

import numpy as np
import pytest

from helpers import require_extra

from bilm_keras import BidirectionalLanguageModel
from bilm_keras.weights.alignment import (
    AlignmentError,
    apply_alignment,
    read_alignment,
    read_alignment_matrix,
)
from bilm_keras.weights.torch_pickle import MAGIC_NUMBER, PROTOCOL_VERSION

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
XLING = FIXTURES / "xling"
MODEL = FIXTURES / "bilm-tf" / "model"
DIM = 32  # 2 * projection_dim of the bilm-tf fixture model
SENTENCES = [["The", "cat", "sat", "."], ["Hi", "!"], []]


def _matrices() -> dict:
    with np.load(XLING / "matrices.npz") as f:
        return {name: f[name] for name in f.files}


# ------------------------------------------------------------ reading
@pytest.mark.parametrize("name", ["best_mapping", "layer_0", "layer_2"])
def test_the_fixture_matrices_read_as_numpy_saved_them(name):
    # best_mapping.pth: torch's legacy format; layer_k.pth: its zip format
    got = read_alignment_matrix(XLING / f"{name}.pth", DIM)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, _matrices()[name])


@pytest.mark.parametrize("zip_format", [True, False])
def test_a_matrix_torch_saves_now_reads_equal(tmp_path, zip_format):
    torch = require_extra("torch", "torch")
    matrix = np.random.default_rng(0).normal(size=(DIM, DIM)).astype(
        np.float32)
    path = tmp_path / "best_mapping.pth"
    torch.save(matrix, path, _use_new_zipfile_serialization=zip_format)
    np.testing.assert_array_equal(read_alignment_matrix(path, DIM), matrix)
    # torch reads the same numbers back
    np.testing.assert_array_equal(torch.load(path, weights_only=False),
                                  matrix)


def test_a_matrix_of_the_wrong_shape_names_file_and_shapes(tmp_path):
    torch = require_extra("torch", "torch")
    path = tmp_path / "es_best_mapping.pth"
    torch.save(np.eye(16, dtype=np.float32), path)
    with pytest.raises(AlignmentError) as e:
        read_alignment([path], n_layers=3, dim=DIM)
    message = str(e.value)
    assert "\n" not in message
    assert str(path) in message and "(32, 32)" in message
    assert "(16, 16)" in message


def test_a_count_of_files_other_than_one_or_each_layer_is_refused():
    with pytest.raises(AlignmentError, match=r"expected 1 file \(every "
                       r"layer\) or 3 \(one per output layer\), found 2"):
        read_alignment([XLING / "layer_0.pth", XLING / "layer_1.pth"],
                       n_layers=3, dim=DIM)


def test_a_state_dict_is_not_a_matrix(tmp_path):
    torch = require_extra("torch", "torch")
    path = tmp_path / "mapping.pth"
    torch.save({"weight": torch.eye(DIM)}, path)
    with pytest.raises(AlignmentError, match=r"mapping\.pth: expected a "
                       r"matrix, found dict"):
        read_alignment_matrix(path, DIM)


# ------------------------------------------------------------ hostile
def _hostile_pickle(module: str, name: str, argument) -> bytes:
    """A protocol-2 pickle that calls ``module.name(argument)``."""
    call = pickle.dumps((argument,), protocol=2)[2:-1]  # no PROTO, STOP
    return (b"\x80\x02c" + f"{module}\n{name}\n".encode() + call + b"R.")


def _legacy_file(payload: bytes) -> bytes:
    """torch's legacy format with ``payload`` as the saved object."""
    return (pickle.dumps(MAGIC_NUMBER, protocol=2)
            + pickle.dumps(PROTOCOL_VERSION, protocol=2)
            + pickle.dumps({"protocol_version": PROTOCOL_VERSION},
                           protocol=2)
            + payload + pickle.dumps([], protocol=2))


def _zip_file(payload: bytes) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("best_mapping/data.pkl", payload)
        archive.writestr("best_mapping/byteorder", "little")
        archive.writestr("best_mapping/version", "3\n")
    return data.getvalue()


@pytest.mark.parametrize("layout", [_legacy_file, _zip_file])
@pytest.mark.parametrize("module, name, make_argument", [
    ("os", "system", lambda canary: f"touch {canary}"),
    ("posix", "system", lambda canary: f"touch {canary}"),
    ("builtins", "eval",
     lambda canary: f"open({str(canary)!r}, 'w').close()"),
    ("subprocess", "Popen", lambda canary: ["touch", str(canary)]),
])
def test_a_hostile_pth_is_refused_in_one_line_and_nothing_runs(
        tmp_path, layout, module, name, make_argument):
    canary = tmp_path / "canary"
    path = tmp_path / "best_mapping.pth"
    path.write_bytes(layout(_hostile_pickle(module, name,
                                            make_argument(canary))))
    with pytest.raises(AlignmentError) as e:
        read_alignment([path], n_layers=3, dim=DIM)
    message = str(e.value)
    assert "\n" not in message
    assert str(path) in message and f"'{module}.{name}'" in message
    assert not canary.exists()


# ------------------------------------------------------------ applying
def test_apply_alignment_is_layers_times_the_transpose():
    rng = np.random.default_rng(1)
    layers = rng.normal(size=(3, 5, DIM)).astype(np.float32)
    matrices = [rng.normal(size=(DIM, DIM)).astype(np.float32)
                for _ in range(3)]
    got = apply_alignment(layers, matrices)
    for k in range(3):  # demo.py: np.matmul(embeddings, aligning.T)
        np.testing.assert_allclose(got[k], layers[k] @ matrices[k].T,
                                   rtol=0, atol=1e-6)


@pytest.fixture(scope="module")
def plain_layers():
    bilm = BidirectionalLanguageModel.from_pretrained(MODEL)
    return bilm.embed_sentences(SENTENCES)  # (3, n, D) each


@pytest.mark.slow
def test_one_file_maps_every_layer_of_the_facade(plain_layers):
    bilm = BidirectionalLanguageModel.from_pretrained(
        MODEL, alignment=XLING / "best_mapping.pth")
    w = _matrices()["best_mapping"].astype(np.float64)
    got = bilm.embed_sentences(SENTENCES)
    for plain, aligned in zip(plain_layers, got):
        assert aligned.shape == plain.shape
        np.testing.assert_allclose(aligned, plain.astype(np.float64) @ w.T,
                                   rtol=0, atol=1e-6)


@pytest.mark.slow
def test_one_file_per_layer_maps_each_before_the_mix(plain_layers):
    files = [XLING / f"layer_{k}.pth" for k in range(3)]
    bilm = BidirectionalLanguageModel.from_pretrained(MODEL,
                                                      alignment=files)
    matrices = _matrices()
    weights, gamma = np.array([0.2, 0.5, 0.3]), 0.8
    got = bilm.embed_sentences(SENTENCES, output="mix",
                               mix_weights=list(weights), gamma=gamma)
    for plain, mixed in zip(plain_layers, got):
        layers = plain.astype(np.float64)
        aligned = [layers[k] @ matrices[f"layer_{k}"].astype(
            np.float64).T for k in range(3)]
        want = gamma * sum(s * h for s, h in zip(weights, aligned))
        np.testing.assert_allclose(mixed, want, rtol=0, atol=1e-6)
    # the top layer alone: its own matrix
    top = bilm.embed_sentences(SENTENCES[:1], output="top")[0]
    np.testing.assert_allclose(
        top, plain_layers[0][2].astype(np.float64)
        @ matrices["layer_2"].astype(np.float64).T, rtol=0, atol=1e-6)


def test_published_for_a_model_without_one_is_one_line():
    with pytest.raises(AlignmentError, match=r"alignment: expected a model "
                       r"published with an alignment .* found model "
                       r"without alignment\.pth"):
        BidirectionalLanguageModel.from_pretrained(MODEL,
                                                   alignment="published")


# ------------------------------------------------------------ a dump's run
def test_the_alignment_is_part_of_a_dump_runs_identity(tmp_path):
    """A killed aligned run is never resumed without its matrices (or
    with others): their contents are in the run's identity."""
    from bilm_keras.embedding.dump_plan import (
        DumpSettings, dump_record, plan_dump)
    from bilm_keras.embedding.outputs import EmbeddingSpec

    text = tmp_path / "text.txt"
    text.write_text("The cat sat .\n", encoding="utf-8")
    spec = EmbeddingSpec()

    def identity(alignment):
        settings = DumpSettings(alignment=alignment)
        files = dict(options_file=MODEL / "options.json",
                     weight_file=MODEL / "lm_weights.hdf5",
                     vocab_file=None, dataset_file=text)
        plan = plan_dump(spec=spec, settings=settings, **files)
        return dump_record(plan, spec, settings, **files)

    record = identity([XLING / "best_mapping.pth"])
    assert record.attrs["alignment"] == [str(XLING / "best_mapping.pth")]
    plain = identity(()).identity
    assert "alignment" not in identity(()).attrs
    one = record.identity
    other = identity([XLING / "layer_1.pth"]).identity
    assert not any(key.startswith("alignment") for key in plain)
    assert {k: v for k, v in one.items()
            if not k.startswith("alignment")} == plain
    assert one != other
