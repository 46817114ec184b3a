"""The pipeline's demo embeds the user's own heldout sentences."""

from bilm_keras.training.pipeline import heldout_examples


def test_heldout_examples_are_the_first_sentences_in_file_order(tmp_path):
    (tmp_path / "b.txt").write_text("第三 句\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("\n  \n深度 学习\n", encoding="utf-8")
    pattern = str(tmp_path / "*.txt")
    assert heldout_examples(pattern) == [["深度", "学习"], ["第三", "句"]]
    assert heldout_examples(pattern, n=1) == [["深度", "学习"]]
    assert heldout_examples(str(tmp_path / "none*.txt")) == []
