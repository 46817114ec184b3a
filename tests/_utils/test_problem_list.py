"""bilm_keras/_utils/problem_list.py: six problems named, the rest
counted."""

from bilm_keras._utils.problem_list import fit_problems, name_list, problem_list


def test_six_or_fewer_are_all_named():
    assert problem_list(["a: x"]) == "a: x"
    six = [f"p{i}" for i in range(6)]
    assert problem_list(six) == "p0; p1; p2; p3; p4; p5"


def test_beyond_six_the_rest_are_counted():
    nine = [f"p{i}" for i in range(9)]
    assert problem_list(nine) == "p0; p1; p2; p3; p4; p5; and 3 more"
    assert problem_list(nine, most=2) == "p0; p1; and 7 more"


def test_fit_problems_names_each_misfit_then_each_extra():
    expected = {"a": (2, 3), "b": (4,), "c": (5,)}
    stored = {"z": (1,), "a": (2, 3), "b": (4, 1), "y": (7,)}
    assert fit_problems(expected, stored) == [
        "b: options give shape (4,), checkpoint has (4, 1)",
        "c: options give shape (5,), checkpoint has none",
        "z: in the checkpoint (1,), not in the model the options describe",
        "y: in the checkpoint (7,), not in the model the options describe",
    ]
    # extra: only these stored names need a variable, in this order
    assert fit_problems(expected, stored, ["y", "a"]) == [
        "b: options give shape (4,), checkpoint has (4, 1)",
        "c: options give shape (5,), checkpoint has none",
        "y: in the checkpoint (7,), not in the model the options describe",
    ]
    assert fit_problems(expected, {**stored, "c": None}, extra=())[1] == (
        "c: options give shape (5,), checkpoint has none")
    assert fit_problems({"a": (2,)}, {"a": (2,)}) == []


def test_name_list():
    assert name_list([]) == "none"
    assert name_list([], empty="no files") == "no files"
    assert name_list("abcdef") == "a, b, c, d, e, f"
    assert name_list("abcdefg") == "a, b, c, d, e, f, ..."
    assert name_list([3, 1, 2], most=2) == "3, 1, ..."
