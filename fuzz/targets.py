"""One fuzz target per reader of a downloaded file, through the entry point
a user calls.

A target writes an input's bytes as the file (or one file of the folder)
the reader takes, calls the reader, and names the errors it documents.
A folder target's input is one selector byte (which of the folder's files
the rest replaces; the others are the seed folder's) and that file's
bytes. Seeds are the fixtures in ``tests/fixtures/``; the structured
mutations are :mod:`fuzz.mutations`'.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random
from typing import Callable, Dict, List, Tuple

from fuzz import mutations

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
#: the kept corpus (minimised) and the regression inputs, per target
CORPUS = os.path.join(REPO, "fuzz", "corpus")
REGRESSIONS = os.path.join(REPO, "fuzz", "regressions")


def _fixture(*parts) -> str:
    return os.path.join(FIXTURES, *parts)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


#: a seed folder's file, read once: an input replaces one file of a folder
#: and the others are the same bytes every time
_seed_file = functools.lru_cache(maxsize=None)(_read)


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


@dataclasses.dataclass
class Target:
    """A reader to fuzz.

    Attributes:
        name: str. The target's name (its corpus folder).
        reader: str. What it reads, through which entry point.
        files: list. ``(name, seed paths)``: the file(s) an input becomes;
            several make a folder target.
        call: callable. ``call(inputs_dir, out_dir)`` runs the reader.
        error_names: tuple. ``(module, class)`` of the documented errors.
        mutate_file: dict. File name -> its structured mutation.
        seconds: float. Time allowed per input.
        memory_bytes: int. Address space allowed beyond the harness' base.
        builds_model: bool. The call builds a TensorFlow model (slow).
        extra_seeds: callable or None. More seeds, made in memory.
    """

    name: str
    reader: str
    files: List[Tuple[str, List[str]]]
    call: Callable[[str, str], None]
    error_names: Tuple[Tuple[str, str], ...]
    mutate_file: Dict[str, Callable] = dataclasses.field(
        default_factory=dict)
    seconds: float = 10.0
    memory_bytes: int = 0
    builds_model: bool = False
    extra_seeds: Callable = None
    #: the fixed files of a folder target (name -> path)
    fixed: Dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def errors(self) -> tuple:
        import importlib

        return tuple(getattr(importlib.import_module(m), c)
                     for m, c in self.error_names)

    @property
    def folder(self) -> bool:
        """Whether an input starts with a selector byte."""
        return len(self.files) > 1

    def _split(self, data: bytes) -> Tuple[int, bytes]:
        if not self.folder:
            return 0, data
        if not data:
            return 0, b""
        return data[0] % len(self.files), data[1:]

    def _join(self, index: int, body: bytes) -> bytes:
        return bytes([index]) + body if self.folder else body

    def input_files(self, data: bytes) -> Dict[str, bytes]:
        """The files ``data`` becomes: file name -> bytes."""
        index, body = self._split(data)
        files = {name: body if i == index else _seed_file(seeds[0])
                 for i, (name, seeds) in enumerate(self.files)}
        files.update((name, _seed_file(path))
                     for name, path in self.fixed.items())
        return files

    def write_inputs(self, data: bytes, inputs: str) -> None:
        for name, content in self.input_files(data).items():
            _write(os.path.join(inputs, name), content)

    def run(self, inputs: str, out: str) -> None:
        self.call(inputs, out)

    def seeds(self) -> List[bytes]:
        found = []
        for i, (_, paths) in enumerate(self.files):
            found += [self._join(i, _read(p)) for p in paths]
        if self.extra_seeds is not None:
            found += self.extra_seeds()
        return found

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        """A structured mutation of ``data`` (the same file slot)."""
        index, body = self._split(data)
        name = self.files[index][0]
        mutate = self.mutate_file.get(name) or self.mutate_file.get("*")
        if mutate is None:
            return data
        return self._join(index, mutate(body, rng))


# -------------------------------------------------------------- the calls
def _options(inputs, out):
    from bilm_keras.options import BiLMOptions

    BiLMOptions.from_json(os.path.join(inputs, "options.json"))


def _vocabulary(inputs, out):
    from bilm_keras.data.vocabulary import (
        UnicodeCharsVocabulary, Vocabulary)

    path = os.path.join(inputs, "vocab.txt")
    vocab = Vocabulary(path, validate_file=True)
    vocab.encode("the <UNK> 猫 .")
    chars = UnicodeCharsVocabulary(path, 50, validate_file=True)
    chars.encode_chars("the cat", split=True)


def _archive(inputs, out):
    from bilm_keras.pretrained.archives import extract_archive

    extract_archive(os.path.join(inputs, "model.tar"), out)


def _torch_pickle(inputs, out):
    from bilm_keras.weights.torch_pickle import read_torch_state_dict

    read_torch_state_dict(os.path.join(inputs, "encoder.pkl"))


def _pdparams(inputs, out):
    from bilm_keras.weights.paddle_pdparams import read_pdparams

    read_pdparams(os.path.join(inputs, "elmo.pdparams"))


def _persistables(inputs, out):
    from bilm_keras.weights.paddle_persistables import read_variable

    read_variable(os.path.join(inputs, "lstmp_0.w_0"))


def _hdf5(inputs, out):
    from bilm_keras import BidirectionalLanguageModel

    BidirectionalLanguageModel(os.path.join(inputs, "options.json"),
                               os.path.join(inputs, "lm_weights.hdf5"))


def _from_pretrained(inputs, out):
    from bilm_keras import BidirectionalLanguageModel

    BidirectionalLanguageModel.from_pretrained(inputs, cache_dir=out)


def _convert_manylangs(inputs, out):
    from bilm_keras.weights.manylangs_conversion import convert_manylangs

    convert_manylangs(inputs, os.path.join(out, "converted"))


def _convert_paddle(inputs, out):
    from bilm_keras.weights.paddle_conversion import convert_paddle

    convert_paddle(os.path.join(inputs, "checkpoint"),
                   os.path.join(out, "converted"),
                   vocab_file=os.path.join(inputs, "vocab.txt"))


def _tfhub_module(inputs, out):
    from bilm_keras.weights.tfhub_module import (
        read_tfhub_module, write_converted)

    write_converted(read_tfhub_module(inputs), os.path.join(out, "converted"))


def _tf1_checkpoint(inputs, out):
    from bilm_keras.save_dirs.bilm_tf_run import dump_bilm_tf_checkpoint
    from bilm_keras.weights.model_detection import locate_checkpoint

    found = locate_checkpoint(inputs)
    found.require_latest(inputs)
    dump_bilm_tf_checkpoint(inputs, found,
                            os.path.join(out, "lm_weights.hdf5"))


# ------------------------------------------------------------- the targets
def _archive_seeds() -> List[bytes]:
    import io
    import tarfile
    import zipfile

    model = _fixture("bilm-tf", "model")
    names = ["options.json", "vocab_test.txt"]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for n in names:
            zf.write(os.path.join(model, n), "model/" + n)
    seeds = [out.getvalue()]
    for mode in ("w:gz", "w:bz2", "w"):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode=mode) as tf:
            for n in names:
                tf.add(os.path.join(model, n), "model/" + n)
        seeds.append(out.getvalue())
    rng = random.Random(0)
    seeds += [mutations.hostile_archive(rng) for _ in range(12)]
    return seeds


def _hostile_pickles() -> List[bytes]:
    rng = random.Random(0)
    return [mutations.pickle_hostile_global(b"", rng) for _ in range(6)] + [
        mutations.pickle_deep(rng) for _ in range(4)]


def _archive_mutate(data, rng):
    if rng.random() < 0.5:
        return mutations.hostile_archive(rng)
    return data


def _baike_files() -> List[Tuple[str, List[str]]]:
    folder = _fixture("paddle_baike", "checkpoint")
    picks = ["embedding_para", "lstmp_0.w_0", "lstmp_0.b_0", "lstmp_0.w_1",
             "fw_layer1_gate_w", "softmax_weight", "learning_rate_0"]
    return [(f"checkpoint/{n}", [os.path.join(folder, n)]) for n in picks]


def _baike_fixed() -> Dict[str, str]:
    folder = _fixture("paddle_baike", "checkpoint")
    picked = {n for n, _ in _baike_files()}
    fixed = {f"checkpoint/{n}": os.path.join(folder, n)
             for n in sorted(os.listdir(folder))
             if f"checkpoint/{n}" not in picked}
    return fixed


def _save_dir_files():
    run = _fixture("bilm_tf_run")
    files = []
    for name in ("model.ckpt-40.index", "model.ckpt-40.data-00000-of-00001",
                 "checkpoint", "options.json"):
        files.append((name, [os.path.join(run, sub, name)
                             for sub in ("save_dir", "save_dir_tf12")]))
    return files


def _manylangs_files():
    model = _fixture("elmoformanylangs", "tiny.model")
    return [(n, [os.path.join(model, n)]) for n in (
        "config.json", "cnn_6_8_16_64_tiny.json", "char.dic", "word.dic",
        "token_embedder.pkl", "encoder.pkl")]


#: the TF1 Hub module fixtures a libFuzzer input can hold whole (its
#: -max_len is 1 MiB)
_HUB_MODULES = ("google", "google_tf12", "google_skip", "deeppavlov")
_HUB_FILES = ("saved_model.pb", "tfhub_module.pb", "variables/variables.index",
              "variables/variables.data-00000-of-00002",
              "variables/variables.data-00001-of-00002")


def _tfhub_files():
    root = _fixture("tfhub_modules")
    return [(n, [p for p in (os.path.join(root, m, n) for m in _HUB_MODULES)
                 if os.path.getsize(p) < (1 << 20)]) for n in _HUB_FILES]


def _tfhub_seeds() -> List[bytes]:
    """Each module's graph cut to the nodes the options come from."""
    root = _fixture("tfhub_modules")
    return [bytes([0]) + mutations.saved_model_prune(
        _read(os.path.join(root, m, "saved_model.pb"))) for m in _HUB_MODULES]


_ERR = {
    "options": ("bilm_keras.options", "OptionsError"),
    "vocab": ("bilm_keras.data.vocabulary", "VocabularyError"),
    "pretrained": ("bilm_keras.pretrained.errors", "PretrainedModelError"),
    "torch": ("bilm_keras.weights.torch_pickle", "TorchPickleError"),
    "pdparams": ("bilm_keras.weights.paddle_pdparams", "PdparamsError"),
    "paddle": ("bilm_keras.weights.paddle_model", "PaddleFormatError"),
    "hdf5": ("bilm_keras.weights.bilm_tf_hdf5", "WeightFileError"),
    "checkpoint": ("bilm_keras.weights.bilm_tf_checkpoint",
                   "CheckpointFileError"),
    "ml_config": ("bilm_keras.weights.manylangs_config",
                  "ManyLangsConfigError"),
    "ml_dict": ("bilm_keras.data.manylangs_dictionaries",
                "ManyLangsDictionaryError"),
    "ml_weight": ("bilm_keras.weights.manylangs_pkl", "ManyLangsWeightError"),
    "tfhub": ("bilm_keras.weights.tfhub_module", "TFHubModuleError"),
}


def _targets() -> Dict[str, Target]:
    options_seeds = [_fixture("bilm-tf", "model", "options.json"),
                     _fixture("bilm_tf_run", "save_dir", "options.json")] + [
        os.path.join(REPO, "options", n)
        for n in sorted(os.listdir(os.path.join(REPO, "options")))]
    vocab_seeds = [_fixture("bilm-tf", "model", "vocab_test.txt"),
                   _fixture("bilm_tf_run", "vocab.txt"),
                   _fixture("paddle_baike", "vocab.txt")]
    pickles = {"*": mutations.torch_file_mutate}
    targets = [
        Target("options", "BiLMOptions.from_json (options.json)",
               [("options.json", options_seeds)], _options,
               (_ERR["options"],), {"*": mutations.json_mutate}, 5.0),
        Target("vocabulary", "Vocabulary, UnicodeCharsVocabulary (vocab.txt)",
               [("vocab.txt", vocab_seeds)], _vocabulary, (_ERR["vocab"],),
               {"*": mutations.text_mutate}, 5.0),
        Target("archive", "extract_archive (.zip, .tar.gz, ...)",
               [("model.tar", [])], _archive, (_ERR["pretrained"],),
               {"*": _archive_mutate}, 20.0, extra_seeds=_archive_seeds),
        Target("torch_pickle", "read_torch_state_dict (.pkl, .pth)",
               [("encoder.pkl", [
                   _fixture("elmoformanylangs", "tiny.model", n)
                   for n in ("token_embedder.pkl", "encoder.pkl")] + [
                   os.path.join(CORPUS, "torch_pickle", "zip_format.pkl")])],
               _torch_pickle, (_ERR["torch"],), pickles, 10.0,
               extra_seeds=_hostile_pickles),
        Target("pdparams", "read_pdparams (.pdparams, .pdopt)",
               [("elmo.pdparams", [
                   _fixture("paddlenlp_elmo", n) for n in (
                       "elmo.pdparams", "checkpoints/1.pdopt")])],
               _pdparams, (_ERR["pdparams"],),
               {"*": mutations.pickle_mutate}, 10.0,
               extra_seeds=_hostile_pickles),
        Target("persistables", "read_variable (a Fluid persistable)",
               [("lstmp_0.w_0", [
                   _fixture("paddle_baike", "checkpoint", n) for n in (
                       "lstmp_0.w_0", "embedding_para", "learning_rate_0",
                       "lstmp_0.b_0")])],
               _persistables, (_ERR["paddle"],),
               {"*": mutations.fluid_mutate}, 5.0),
        Target("hdf5", "BidirectionalLanguageModel(options, lm_weights.hdf5)",
               [("lm_weights.hdf5", [
                   _fixture("bilm-tf", "model", "lm_weights.hdf5")])],
               _hdf5, (_ERR["hdf5"], _ERR["options"]),
               {"*": mutations.hdf5_mutate}, 60.0, 1 << 30, True,
               fixed={"options.json": _fixture("bilm-tf", "model",
                                               "options.json")}),
        Target("from_pretrained",
               "BidirectionalLanguageModel.from_pretrained(folder)",
               [("options.json", [_fixture("bilm-tf", "model",
                                           "options.json")]),
                ("lm_weights.hdf5", [_fixture("bilm-tf", "model",
                                              "lm_weights.hdf5")]),
                ("vocab.txt", [_fixture("bilm-tf", "model",
                                        "vocab_test.txt")])],
               _from_pretrained,
               (_ERR["pretrained"], _ERR["options"], _ERR["hdf5"],
                _ERR["vocab"]),
               {"options.json": mutations.json_mutate,
                "lm_weights.hdf5": mutations.hdf5_mutate,
                "vocab.txt": mutations.text_mutate}, 60.0, 1 << 30, True),
        Target("convert_manylangs", "convert_manylangs(model folder)",
               _manylangs_files(), _convert_manylangs,
               (_ERR["ml_config"], _ERR["ml_dict"], _ERR["ml_weight"]),
               {"config.json": mutations.json_mutate,
                "cnn_6_8_16_64_tiny.json": mutations.json_mutate,
                "char.dic": mutations.text_mutate,
                "word.dic": mutations.text_mutate,
                "token_embedder.pkl": mutations.torch_file_mutate,
                "encoder.pkl": mutations.torch_file_mutate}, 20.0),
        Target("convert_paddle", "convert_paddle(Fluid checkpoint folder)",
               _baike_files() + [("vocab.txt", [_fixture(
                   "paddle_baike", "vocab.txt")])],
               _convert_paddle, (_ERR["paddle"],),
               {"vocab.txt": mutations.text_mutate,
                "*": mutations.fluid_mutate}, 20.0, fixed=_baike_fixed()),
        Target("tf1_checkpoint",
               "dump_bilm_tf_checkpoint(bilm-tf save_dir)",
               _save_dir_files(), _tf1_checkpoint,
               (_ERR["checkpoint"], _ERR["options"]),
               {"options.json": mutations.json_mutate}, 60.0, 1 << 30, True),
        Target("tfhub_module",
               "read_tfhub_module, write_converted (TF1 Hub module folder)",
               _tfhub_files(), _tfhub_module, (_ERR["tfhub"],),
               {"saved_model.pb": mutations.saved_model_mutate}, 30.0,
               1 << 30, extra_seeds=_tfhub_seeds),
    ]
    return {t.name: t for t in targets}


TARGETS = _targets()


def target(name: str) -> Target:
    """A target by name, or ``module:attribute`` for one defined elsewhere
    (the suite's planted targets, which prove the checks can fail)."""
    if ":" in name:
        import importlib

        module, attribute = name.split(":", 1)
        return getattr(importlib.import_module(module), attribute)
    return TARGETS[name]
