"""Each input the fuzz campaign found a flaw with (``fuzz/regressions/``,
minimised) gets the reader's one-line error, named and matched here: the
fix of each finding, kept."""

import importlib
import os
import resource

import pytest

from fuzz.harness import Workspace, warm_up
from fuzz.targets import REGRESSIONS, TARGETS

#: (target, input, error module and class, what its message says)
CASES = [
    ("options", "not_utf8.json", "bilm_keras.options.OptionsError",
     r"options\.json: not UTF-8 text \(byte 68: invalid continuation"),
    ("vocabulary", "not_utf8.txt",
     "bilm_keras.data.vocabulary.VocabularyError",
     r"vocab\.txt: line 5: expected UTF-8 text, found byte b'\\xff' at "
     r"column 1"),
    ("archive", "member_before_the_file_start.zip",
     "bilm_keras.pretrained.errors.PretrainedModelError",
     r"member 'model/options\.json': refused \(unreadable: \[Errno 22\]"),
    ("archive", "zip_bomb_8mb.zip",
     "bilm_keras.pretrained.errors.PretrainedModelError",
     r"member 'model/bomb\.bin': refused \(the members expand to 8388610 "
     r"bytes or more, over 100 times the archive's size: a bomb\)"),
    ("archive", "tar_bomb_8mb.tar.gz",
     "bilm_keras.pretrained.errors.PretrainedModelError",
     r"member 'model/bomb\.bin': refused \(the members expand to 8388608 "),
    ("torch_pickle", "version_nested_5000_deep.pkl",
     "bilm_keras.weights.torch_pickle.TorchPickleError",
     r"expected torch's legacy format version 1001, found \(\(\(\(\.\.\.\),"
     r"\),\),\)$"),
    ("pdparams", "list_holding_itself.pickle",
     "bilm_keras.weights.paddle_pdparams.PdparamsError",
     r"found containers nested deeper than Python's recursion limit, or "
     r"holding themselves"),
    ("pdparams", "shape_of_2_to_the_64.pdparams",
     "bilm_keras.weights.paddle_pdparams.PdparamsError",
     r"found an array of shape \(2, 18446744073709551616\) float32 in 16 "
     r"bytes \(expected 147573952589676412928\)"),
    ("archive", "gzip_crc_wrong.tar.gz",
     "bilm_keras.pretrained.errors.PretrainedModelError",
     r"cannot read the archive \(BadGzipFile: CRC check failed "),
    ("pdparams", "bytes_claiming_4_gib.pdparams",
     "bilm_keras.weights.paddle_pdparams.PdparamsError",
     r"elmo\.pdparams: not a \.pdparams pickle, or cut short \(an opcode "
     r"claiming 4294967296 bytes at byte 11, where 5 are left\)$"),
    ("torch_pickle", "record_before_the_file_start.pt",
     "bilm_keras.weights.torch_pickle.TorchPickleError",
     r"expected a torch zip archive \(torch >= 1\.6\), found a damaged or "
     r"truncated one \(OSError: \[Errno 22\] Invalid argument\)$"),
    ("pdparams", "memo_index_2_to_the_28.pdparams",
     "bilm_keras.weights.paddle_pdparams.PdparamsError",
     r"elmo\.pdparams: expected a dict of parameters, found a NoneType$"),
    ("torch_pickle", "memo_index_2_to_the_28.pkl",
     "bilm_keras.weights.torch_pickle.TorchPickleError",
     r"encoder\.pkl: expected a PyTorch file starting with torch's magic "
     r"number 0x1950a86a20f9469cfc6c, found a pickled NoneType$"),
    ("hdf5", "cut_to_its_first_kilobyte.hdf5",
     "bilm_keras.weights.bilm_tf_hdf5.WeightFileError",
     r"lm_weights\.hdf5: expected an HDF5 weight file, found a file h5py "
     r"cannot read"),
    ("pdparams", "bytearray8_claiming_4_gib.pdparams",
     "bilm_keras.weights.paddle_pdparams.PdparamsError",
     r"found a BYTEARRAY8 \(an out-of-band buffer: neither torch's nor "
     r"Paddle's files hold one\)$"),
    ("hdf5", "soft_link_loop.hdf5",
     "bilm_keras.weights.bilm_tf_hdf5.WeightFileError",
     r"lm_weights\.hdf5: missing dataset 'CNN_high_1/b_carry' \(expected "
     r"shape \(124,\)\)$"),
    # the state file names a path no file system holds: passed over, and
    # the save_dir's checkpoint found by its file name is dumped
    ("tf1_checkpoint", "state_file_path_with_nul.bin", None, None),
    ("convert_manylangs", "encoder_n_layers_10_to_the_31.bin",
     "bilm_keras.weights.manylangs_pkl.ManyLangsWeightError",
     r"encoder\.pkl: expected at least 8000000000000000000000000000000 keys "
     r"for the config's n_layers 1000000000000000000000000000000, n_highway "
     r"2 and 4 filters, found 16$"),
    ("torch_pickle", "record_claiming_3_gib.pt",
     "bilm_keras.weights.torch_pickle.TorchPickleError",
     r"encoder\.pkl: zip_format/byteorder: expected a record inside the "
     r"file's 1227 bytes, found one claiming 3674210310 bytes at byte 189$"),
    ("torch_pickle", "record_name_with_a_line_break.pt",
     "bilm_keras.weights.torch_pickle.TorchPickleError",
     r"encoder\.pkl: Storage\\n.*: expected a record inside the file's 898 "
     r"bytes, found one claiming 301 bytes at byte 1952541964$"),
    ("torch_pickle", "record_name_not_utf8.pt",
     "bilm_keras.weights.torch_pickle.TorchPickleError",
     r"encoder\.pkl: expected a torch zip archive \(torch >= 1\.6\), found "
     r"a damaged or truncated one \(UnicodeDecodeError: 'utf-8' codec "),
    ("hdf5", "compound_dtype_dataset.hdf5",
     "bilm_keras.weights.bilm_tf_hdf5.WeightFileError",
     r"lm_weights\.hdf5: dataset 'CNN_high_0/b_carry' has dtype \[\('f0', "
     r"'<f4'\), \('f1', '<f4'\)\], expected floating-point numbers$"),
    ("from_pretrained", "options_dim_10000000.bin",
     "bilm_keras.weights.bilm_tf_hdf5.WeightFileError",
     r"lm_weights\.hdf5: dataset 'RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0' "
     r"has shape \(32, 256\), expected \(32, 40000000\) \(lstm\.dim "
     r"10000000 and n_layers 2\)$"),
    ("from_pretrained", "options_n_layers_10000.bin",
     "bilm_keras.weights.bilm_tf_hdf5.WeightFileError",
     r"lm_weights\.hdf5: missing dataset "
     r"'RNN_0/RNN/MultiRNNCell/Cell2/LSTMCell/W_0' \(expected shape "
     r"\(32, 256\)\), which lstm\.dim 64 and n_layers 10000 asks for$"),
    ("tf1_checkpoint", "options_dim_10000000.bin",
     "bilm_keras.weights.bilm_tf_checkpoint.CheckpointFileError",
     r"options\.json does not fit bilm-tf checkpoint .*model\.ckpt-40: "
     r"lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel: options give "
     r"shape \(32, 40000000\), checkpoint has \(32, 128\) \(lstm\.dim "
     r"10000000 and n_layers 2\)$"),
    ("tf1_checkpoint", "options_n_highway_10000.bin",
     "bilm_keras.weights.bilm_tf_checkpoint.CheckpointFileError",
     r"model\.ckpt-40: lm/CNN_high_2/W_carry: options give shape \(48, 48\), "
     r"checkpoint has no such variable \(char_cnn\.n_highway 10000 \(with "
     r"48 filters\)\)$"),
    ("tfhub_module", "index_block_checksum_wrong.bin",
     "bilm_keras.weights.tfhub_module.TFHubModuleError",
     r"variables\.index: not a readable TensorFlow checkpoint \(Unable to "
     r"read file .*: block checksum mismatch\)$"),
    ("tfhub_module", "clip_bound_of_one_byte.bin",
     "bilm_keras.weights.tfhub_module.TFHubModuleError",
     r"saved_model\.pb: bilm/RNN_0/RNN/MultiRNNCell/Cell0/rnn/while/"
     r"lstm_cell/clip_by_value/Minimum/y: expected a float32 constant \(a "
     r"clip's bound\), found 1 bytes and no float value$"),
]


def _error(name):
    module, cls = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)


def test_every_regression_input_has_a_case():
    named = {(t, f) for t, f, _, _ in CASES}
    kept = {(t, f) for t in os.listdir(REGRESSIONS)
            for f in os.listdir(os.path.join(REGRESSIONS, t))}
    assert kept == named


@pytest.mark.slow
@pytest.mark.parametrize("target, name, error, match", CASES,
                         ids=[f"{t}/{f}" for t, f, _, _ in CASES])
def test_the_finding_is_refused_in_one_line(target, name, error, match,
                                            tmp_path):
    with open(os.path.join(REGRESSIONS, target, name), "rb") as f:
        data = f.read()
    workspace = Workspace(str(tmp_path))
    warm_up(TARGETS[target], workspace)  # its imports, outside the limit
    workspace.reset()
    TARGETS[target].write_inputs(data, workspace.inputs)
    # what the flaw allocated first (gigabytes, for "dim": 10000000) fails
    # here instead: the error must come before any of it
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), hard))
    try:
        if error is None:  # read as the valid input it holds
            TARGETS[target].run(workspace.inputs, workspace.out)
            assert os.listdir(workspace.out)
            return
        with pytest.raises(_error(error), match=match) as info:
            TARGETS[target].run(workspace.inputs, workspace.out)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert "\n" not in str(info.value)
    if target != "archive":  # extract_archive's caller removes its folder
        assert os.listdir(workspace.out) == []
