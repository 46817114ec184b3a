"""The one place that chooses a batcher from a model's options."""

from __future__ import annotations

import os
from typing import Optional

from bilm_keras.data.batcher import Batcher, TokenBatcher
from bilm_keras.data.manylangs_batcher import ManyLangsBatcher
from bilm_keras.data.manylangs_dictionaries import read_char_dic, read_word_dic
from bilm_keras.options import BiLMOptions


def batcher_for_options(
    options: Optional[BiLMOptions],
    vocab_file: Optional[str | os.PathLike] = None,
    *,
    use_character_inputs: Optional[bool] = None,
    max_characters_per_token: Optional[int] = None,
) -> Batcher | ManyLangsBatcher | TokenBatcher:
    """The batcher whose ids the model of ``options`` reads.

    * a converted ELMoForManyLangs model (``options.manylangs``):
      :class:`ManyLangsBatcher` on the options' ``char.dic``/``word.dic``.
      ``vocab_file`` is not needed, since its ids come from the
      dictionaries.
    * another char-CNN model: :class:`Batcher`, ``vocab_file`` optional.
    * token input: :class:`TokenBatcher`, ``vocab_file`` required.

    Args:
        options: the model's options. None for a model known only by its
            input, such as a backbone built in memory. That gets
            :class:`Batcher` or :class:`TokenBatcher`, as
            ``use_character_inputs`` says.
        vocab_file: the vocabulary file, for token input, optional
            otherwise.
        use_character_inputs: by default the options' own, a char-CNN when
            there is ``char_cnn``. False for a token-input model made from
            char options (:func:`~bilm_keras.dump_token_embeddings`).
            Required without ``options``.
        max_characters_per_token: without ``options``, the
            :class:`Batcher`'s width (the options' own otherwise).

    Raises:
        ValueError: token input without ``vocab_file``, char input without
            ``char_cnn``, or dictionaries whose sizes do not match the
            options (``n_characters``, ``n_words``), named by file.
        ManyLangsDictionaryError: a dictionary upstream could not read.
    """
    if use_character_inputs is None:
        if options is None:
            raise ValueError("use_character_inputs: expected True or False "
                             "for a model without options, found None")
        use_character_inputs = options.use_character_inputs
    if not use_character_inputs:
        if vocab_file is None:
            raise ValueError("vocab_file: token input needs the vocabulary "
                             "of the embedding file")
        return TokenBatcher(os.fspath(vocab_file))
    if options is None:
        return Batcher(None if vocab_file is None else os.fspath(vocab_file),
                       max_characters_per_token)
    if options.char_cnn is None:
        raise ValueError("options: character input needs a 'char_cnn' "
                         "section, found none")
    max_chars = options.char_cnn.max_characters_per_token
    manylangs = options.manylangs
    if manylangs is None:
        return Batcher(None if vocab_file is None else os.fspath(vocab_file),
                       max_chars)
    char_dic = read_char_dic(manylangs.char_dic)
    # the tables hold one row per dictionary entry (+ the padding row)
    if len(char_dic) + 1 != options.char_cnn.n_characters:
        expected = options.char_cnn.n_characters - 1
        raise ValueError(
            f"{manylangs.char_dic}: expected {expected} entries "
            f"(char_cnn.n_characters - 1 of the options), found "
            f"{len(char_dic)}")
    word_dic = None
    if manylangs.has_word_part:
        word_dic = read_word_dic(manylangs.word_dic)
        if len(word_dic) != manylangs.n_words:
            raise ValueError(
                f"{manylangs.word_dic}: expected {manylangs.n_words} entries "
                f"(elmoformanylangs.n_words of the options), found "
                f"{len(word_dic)}")
    return ManyLangsBatcher(char_dic, word_dic, max_chars)
