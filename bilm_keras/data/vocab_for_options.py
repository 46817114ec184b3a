"""The vocabulary a model's options call for, loaded from a file: the one
place that picks its class (as :mod:`.batcher_for_options` picks the
batcher), for training, evaluation and a trained run read back."""

from __future__ import annotations

from bilm_keras.data.manylangs_vocabulary import ManyLangsCharsVocabulary
from bilm_keras.data.vocabulary import UnicodeCharsVocabulary, Vocabulary
from bilm_keras.options import BiLMOptions, OptionsError


def load_vocab(vocab_file, options: BiLMOptions) -> Vocabulary:
    """bilm-tf's ``load_vocab``: chars for a char-CNN model, tokens if not.

    When the options name a converted ELMoForManyLangs model's
    dictionaries, it gives that model's own char and word ids
    (:class:`ManyLangsCharsVocabulary`).

    Raises:
        VocabularyError: the file is missing or lacks ``<S>``, ``</S>`` or
            ``<UNK>`` (named in the message).
        ManyLangsDictionaryError: a ``char.dic``/``word.dic`` upstream
            could not read as ids.
    """
    manylangs = options.manylangs
    if manylangs is not None:
        return ManyLangsCharsVocabulary.from_files(
            vocab_file, manylangs.char_dic,
            manylangs.word_dic if manylangs.has_word_part else None,
            options.char_cnn.max_characters_per_token, validate_file=True,
        )
    if options.use_character_inputs:
        return UnicodeCharsVocabulary(
            vocab_file, options.char_cnn.max_characters_per_token,
            validate_file=True,
        )
    return Vocabulary(vocab_file, validate_file=True)


def check_vocab_fits(options: BiLMOptions, vocab: Vocabulary, vocab_file,
                     options_file) -> None:
    """Raises ``OptionsError`` when ``options`` (read from
    ``options_file``) has a softmax of another size than ``vocab``."""
    if options.n_tokens_vocab != vocab.size:
        raise OptionsError(
            f"{options_file}: field 'n_tokens_vocab': expected "
            f"{vocab.size} (the size of {vocab_file}), found "
            f"{options.n_tokens_vocab}"
        )
