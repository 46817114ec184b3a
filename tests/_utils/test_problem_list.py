"""bilm_keras/_utils/problem_list.py: six problems named, the rest
counted."""

from bilm_keras._utils.problem_list import problem_list


def test_six_or_fewer_are_all_named():
    assert problem_list(["a: x"]) == "a: x"
    six = [f"p{i}" for i in range(6)]
    assert problem_list(six) == "p0; p1; p2; p3; p4; p5"


def test_beyond_six_the_rest_are_counted():
    nine = [f"p{i}" for i in range(9)]
    assert problem_list(nine) == "p0; p1; p2; p3; p4; p5; and 3 more"
    assert problem_list(nine, most=2) == "p0; p1; and 7 more"
