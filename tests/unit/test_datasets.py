"""vitrine.datasets: files and Hugging Face datasets read as cases, and every refusal located."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vitrine
from vitrine import Case
from vitrine.datasets import (
    DatasetArgumentError,
    DatasetFileError,
    DatasetUnavailableError,
    load_cases,
    load_csv,
    load_huggingface,
    load_json,
    load_jsonl,
    load_yaml,
)
from vitrine.errors import DatasetError, InvalidArgumentError, InvalidDataError, WrongTypeError


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _refused(call, *, line: int | None, field: str | None, says: str) -> DatasetFileError:
    """The error ``call`` raises, checked to name its file, line and field in its message."""
    with pytest.raises(DatasetFileError) as caught:
        call()
    error = caught.value
    message = str(error)
    assert error.line == line, message
    assert error.field == field, message
    assert Path(error.source).name in message, message
    if line is not None:
        assert f"line {line}" in message, message
    if field is not None:
        assert repr(field) in message, message
    assert says in message, message
    return error


# --- the formats ----------------------------------------------------------------------------


def test_jsonl_rows_become_cases_with_the_rest_as_metadata(tmp_path):
    path = _write(
        tmp_path,
        "qa.jsonl",
        """
        {"id": "q1", "input": "2+2", "expected": "4", "tags": ["math"]}

        {"id": 7, "input": {"q": "3+3"}, "expected": "6"}
        """,
    )
    assert load_jsonl(path) == [
        Case("q1", "2+2", {"expected": "4", "tags": ["math"]}),
        Case("7", {"q": "3+3"}, {"expected": "6"}),
    ]


def test_a_json_array_names_each_row_by_the_line_it_starts_on(tmp_path):
    path = _write(
        tmp_path,
        "qa.json",
        """
        [
          {"id": "a", "input": "x"},

          {"id": "b",
           "input": "y"}, {"input": "z", "id": "c"},
          {"id": "d"}
        ]
        """,
    )
    _refused(lambda: load_json(path), line=6, field="input", says="missing")
    cases = load_json(path, input=lambda row: row.get("input", ""))
    assert [c.id for c in cases] == ["a", "b", "c", "d"]
    _write(tmp_path, "obj.json", '{"tests": []}')
    _refused(lambda: load_json(tmp_path / "obj.json"), line=1, field=None, says="an object")


def test_csv_cells_are_strings_and_a_quoted_cell_may_span_lines(tmp_path):
    path = _write(
        tmp_path,
        "qa.csv",
        """
        id,question,expected
        q1,"two
        lines",4

        q2,3+3,
        """,
    )
    assert load_csv(path, input="question") == [
        Case("q1", "two\nlines", {"expected": "4"}),
        Case("q2", "3+3", {"expected": ""}),
    ]
    tsv = _write(tmp_path, "qa.tsv", "id\tinput\tnote\na\tb,c\td\n")
    assert load_cases(tsv) == [Case("a", "b,c", {"note": "d"})]


def test_a_csv_row_is_named_by_its_starting_line(tmp_path):
    ragged = _write(tmp_path, "r.csv", 'id,input\na,"x\ny"\nb,y,extra\n')
    _refused(lambda: load_csv(ragged), line=4, field=None, says="3 cells")
    spanning = _write(tmp_path, "s.csv", 'id,input\na,x\nb,"two\nlines",extra\n')
    _refused(lambda: load_csv(spanning), line=3, field=None, says="3 cells")
    twice = _write(tmp_path, "h.csv", "id,input,id\n1,2,3\n")
    _refused(lambda: load_csv(twice), line=1, field="id", says="twice")
    blank = _write(tmp_path, "b.csv", "id,,input\n1,2,3\n")
    _refused(lambda: load_csv(blank), line=1, field=None, says="column 2 has no name")
    missing = _write(tmp_path, "m.csv", "id,prompt\n1,2\n2,3\n")
    _refused(lambda: load_csv(missing), line=2, field="input", says="missing")


def test_a_yaml_list_of_rows_maps_like_any_file(tmp_path):
    path = _write(
        tmp_path,
        "rows.yaml",
        """
        - id: a
          input: {question: hi}
          expected: hello
        - id: b
          input: {question: bye}
          expected: goodbye
        """,
    )
    assert load_yaml(path, input="input.question") == [
        Case("a", "hi", {"input": {"question": "hi"}, "expected": "hello"}),
        Case("b", "bye", {"input": {"question": "bye"}, "expected": "goodbye"}),
    ]


PROMPTFOO = """
description: a translation suite
prompts: ["Translate to {{language}}: {{input}}"]
providers: [openai:gpt-4o-mini]
defaultTest:
  vars:
    language: French
  assert:
    - type: not-contains
      value: "as an AI"
  metadata:
    suite: translate
  options:
    provider: judge-a
tests:
  - description: greets
    vars:
      input: Hello world
    assert:
      - type: icontains
        value: bonjour
    metadata:
      id: greet
      difficulty: easy
  - vars:
      input: How are you
      language: German
    metadata:
      id: ask
      suite: other
    options:
      provider: judge-b
    threshold: 0.5
"""


def test_a_promptfoo_test_file_merges_default_test_into_each_test(tmp_path):
    path = _write(tmp_path, "promptfooconfig.yaml", PROMPTFOO)
    greet, ask = load_cases(path)
    assert greet == Case(
        "greet",
        {"language": "French", "input": "Hello world"},
        {
            "vars": {"language": "French", "input": "Hello world"},
            "assert": [
                {"type": "not-contains", "value": "as an AI"},
                {"type": "icontains", "value": "bonjour"},
            ],
            "options": {"provider": "judge-a"},
            "description": "greets",
            "suite": "translate",
            "difficulty": "easy",
        },
    )
    # The test's vars, metadata and options win key by key; the default's assertions come first.
    assert ask.input == {"language": "German", "input": "How are you"}
    assert ask.metadata["suite"] == "other"
    assert ask.metadata["options"] == {"provider": "judge-a"} | {"provider": "judge-b"}
    assert ask.metadata["assert"] == [{"type": "not-contains", "value": "as an AI"}]
    assert ask.metadata["threshold"] == 0.5
    assert "description" not in ask.metadata


def test_a_promptfoo_input_can_be_one_var_and_vars_stay_in_metadata(tmp_path):
    path = _write(tmp_path, "pf.yaml", PROMPTFOO)
    greet, _ = load_yaml(path, input="vars.input")
    assert greet.input == "Hello world"
    assert greet.metadata["vars"]["language"] == "French"
    only = load_yaml(path, input="vars.input", metadata=["assert"])
    assert only[1].metadata == {"assert": [{"type": "not-contains", "value": "as an AI"}]}


def test_a_promptfoo_file_without_ids_numbers_its_tests(tmp_path):
    path = _write(
        tmp_path,
        "tests.yaml",
        """
        tests:
          - vars: {q: one}
          - vars: {q: two}
        """,
    )
    cases = load_yaml(path)
    assert [c.id for c in cases] == ["tests-1", "tests-2"]
    assert cases[0].metadata == {"vars": {"q": "one"}, "assert": []}


def test_promptfoo_shapes_that_would_change_the_test_set_are_refused(tmp_path):
    scenarios = _write(tmp_path, "s.yaml", "tests: []\nscenarios:\n  - config: []\n")
    _refused(lambda: load_yaml(scenarios), line=3, field="scenarios", says="not read")
    linked = _write(tmp_path, "l.yaml", "tests: file://tests.csv\n")
    _refused(lambda: load_yaml(linked), line=1, field="tests", says="file://tests.csv")
    entry = _write(tmp_path, "e.yaml", "tests:\n  - vars: {q: 1}\n  - file://more.yaml\n")
    _refused(lambda: load_yaml(entry), line=3, field=None, says="load that file by itself")
    default = _write(tmp_path, "d.yaml", "defaultTest: file://d.yaml\ntests:\n  - vars: {}\n")
    _refused(lambda: load_yaml(default), line=1, field="defaultTest", says="mapping")
    clash = _write(tmp_path, "c.yaml", "tests:\n  - vars: {q: 1}\n    metadata: {vars: 2}\n")
    _refused(lambda: load_yaml(clash), line=2, field="metadata.vars", says="overwrite")
    bad_vars = _write(tmp_path, "v.yaml", "tests:\n  - description: x\n    vars: [1, 2]\n")
    _refused(lambda: load_yaml(bad_vars), line=2, field="vars", says="a list")
    bad_assert = _write(tmp_path, "a.yaml", "tests:\n  - vars: {}\n    assert: contains\n")
    _refused(lambda: load_yaml(bad_assert), line=2, field="assert", says="list of assertions")
    empty = _write(tmp_path, "n.yaml", "description: nothing\ntests: []\n")
    _refused(lambda: load_yaml(empty), line=None, field=None, says="empty dataset")
    other = _write(tmp_path, "o.yaml", "cases:\n  - id: 1\n")
    _refused(lambda: load_yaml(other), line=1, field=None, says="without tests:")


# --- the mapping ----------------------------------------------------------------------------

ROWS = [
    {"id": "a", "request": {"messages": [{"content": "hi"}]}, "lang": "en", "expected": "hello"},
    {"id": "b", "request": {"messages": [{"content": "yo"}]}, "lang": "fr", "expected": "salut"},
]


@pytest.fixture
def rows_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def test_input_as_a_dotted_path_into_nested_json(rows_file):
    cases = load_jsonl(rows_file, input="request.messages.0.content")
    assert [c.input for c in cases] == ["hi", "yo"]
    # A dotted path takes nothing whole, so the field it walks into stays in the metadata.
    assert cases[0].metadata == {k: v for k, v in ROWS[0].items() if k != "id"}


def test_input_as_a_list_of_fields_is_a_dict_of_them(rows_file):
    cases = load_jsonl(rows_file, input=["lang", "request.messages.0.content"])
    assert cases[1].input == {"lang": "fr", "request.messages.0.content": "yo"}
    assert cases[1].metadata == {"request": ROWS[1]["request"], "expected": "salut"}


def test_input_id_and_metadata_as_callables(rows_file):
    cases = load_jsonl(
        rows_file,
        id=lambda row: f"{row['lang']}-{row['id']}",
        input=lambda row: row["request"]["messages"][0]["content"].upper(),
        metadata=lambda row: {"answer": row["expected"]},
    )
    assert cases == [
        Case("en-a", "HI", {"answer": "hello"}),
        Case("fr-b", "YO", {"answer": "salut"}),
    ]


def test_metadata_as_a_list_and_id_from_another_field(rows_file):
    cases = load_jsonl(rows_file, id="expected", input="lang", metadata=["expected"])
    assert cases[0] == Case("hello", "en", {"expected": "hello"})
    _refused(
        lambda: load_jsonl(rows_file, input="lang", metadata=["answer"]),
        line=1,
        field="answer",
        says="metadata= lists it",
    )


def test_a_callable_that_raises_is_named_at_its_row(rows_file):
    _refused(
        lambda: load_jsonl(rows_file, input=lambda row: row["question"]),
        line=1,
        field=None,
        says="the input callable raised KeyError",
    )


def test_mapping_arguments_of_the_wrong_shape_are_refused_before_reading(tmp_path):
    never_read = tmp_path / "absent.jsonl"
    with pytest.raises(DatasetArgumentError, match=r"metadata=\['expected'\]"):
        load_jsonl(never_read, metadata="expected")
    with pytest.raises(WrongTypeError, match="input="):
        load_jsonl(never_read, input=3)  # type: ignore[arg-type]
    with pytest.raises(DatasetArgumentError, match="list"):
        load_jsonl(never_read, input=[])
    with pytest.raises(WrongTypeError, match="id="):
        load_jsonl(never_read, id=" ")


def test_inputs_and_metadata_must_be_json(tmp_path):
    dated = _write(tmp_path, "d.yaml", "- id: a\n  input: hi\n  when: 2024-01-02\n")
    _refused(lambda: load_yaml(dated), line=1, field="when", says="date, not a JSON value")
    keyed = _write(tmp_path, "k.yaml", "- id: a\n  input: {1: one}\n")
    _refused(lambda: load_yaml(keyed), line=1, field="input", says="not a string")
    nan = _write(tmp_path, "n.jsonl", '{"id": "a", "input": NaN}\n')
    _refused(lambda: load_jsonl(nan), line=1, field="input", says="JSON cannot hold")
    made = _write(tmp_path, "m.jsonl", '{"id": "a", "input": "x"}\n')
    _refused(lambda: load_jsonl(made, input=lambda row: {1, 2}), line=1, field=None, says="set")


# --- ids --------------------------------------------------------------------------------------


def test_id_less_rows_are_numbered_from_the_file_stem_the_same_way_every_time(tmp_path):
    path = _write(tmp_path, "questions.jsonl", '{"input": "a"}\n\n{"input": "b"}\n')
    first = load_jsonl(path)
    assert [c.id for c in first] == ["questions-1", "questions-2"]
    assert load_jsonl(path) == first
    csv_path = _write(tmp_path, "rows.csv", "input\nx\ny\n")
    assert [c.id for c in load_csv(csv_path)] == ["rows-1", "rows-2"]
    # id=None numbers them even when rows carry an id field, which then stays in metadata.
    with_ids = _write(tmp_path, "w.jsonl", '{"id": "z", "input": "a"}\n')
    assert load_jsonl(with_ids, id=None) == [Case("w-1", "a", {"id": "z"})]


def test_some_rows_with_an_id_and_some_without_is_refused(tmp_path):
    path = _write(tmp_path, "half.jsonl", '{"id": "a", "input": 1}\n{"input": 2}\n')
    _refused(lambda: load_jsonl(path), line=2, field="id", says="line 1 has one")


def test_a_named_id_field_that_is_missing_is_refused(tmp_path):
    path = _write(tmp_path, "q.jsonl", '{"qid": "a", "input": 1}\n{"input": 2}\n')
    _refused(lambda: load_jsonl(path, id="qid"), line=2, field="qid", says="missing")


def test_duplicate_ids_name_both_lines(tmp_path):
    path = _write(
        tmp_path,
        "dup.jsonl",
        '{"id": "a", "input": 1}\n{"id": "b", "input": 2}\n{"id": "a", "input": 3}\n',
    )
    error = _refused(lambda: load_jsonl(path), line=3, field="id", says="'a' repeats")
    assert "line 1 and line 3" in str(error)
    # An integer id is the string it spells, so 1 and "1" are the same case.
    mixed = _write(tmp_path, "m.jsonl", '{"id": 1, "input": 1}\n{"id": "1", "input": 2}\n')
    _refused(lambda: load_jsonl(mixed), line=2, field="id", says="repeats")


@pytest.mark.parametrize("value", ['""', '"  "', "[1]", "null", "true", "1.5"])
def test_an_id_that_is_not_a_non_blank_string_or_an_integer_is_refused(tmp_path, value):
    path = _write(tmp_path, "ids.jsonl", f'{{"id": {value}, "input": 1}}\n')
    _refused(lambda: load_jsonl(path), line=1, field="id", says="a case id is")


# --- refusals of a whole file or row --------------------------------------------------------


def test_bad_json_is_named_by_its_line(tmp_path):
    lines = [json.dumps({"id": f"q{n}", "input": n}) for n in range(1, 7)]
    path = _write(tmp_path, "broken.jsonl", "\n".join([*lines, '{"id": "q7", "input": }']) + "\n")
    error = _refused(lambda: load_jsonl(path), line=7, field=None, says="not valid JSON")
    assert "column" in str(error)
    array = _write(tmp_path, "broken.json", '[\n  {"id": "a"},\n  {"id": }\n]\n')
    _refused(lambda: load_json(array), line=3, field=None, says="not valid JSON")
    yml = _write(tmp_path, "broken.yaml", "- id: a\n  input: [unclosed\n- id: b\n")
    _refused(lambda: load_yaml(yml), line=3, field=None, says="not valid YAML")


def test_a_missing_input_field_names_its_line_and_field(tmp_path):
    path = _write(tmp_path, "qa.jsonl", '{"id": "a", "input": 1}\n{"id": "b", "question": 2}\n')
    error = _refused(lambda: load_jsonl(path), line=2, field="input", says="missing")
    assert "input=" in str(error)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("empty.jsonl", ""),
        ("blank.jsonl", "\n  \n\n"),
        ("header.csv", "id,input\n"),
        ("nothing.csv", ""),
        ("empty.yaml", ""),
        ("comments.yaml", "# nothing yet\n"),
        ("list.yaml", "[]\n"),
        ("empty.json", "[]"),
    ],
)
def test_an_empty_dataset_is_an_error_never_zero_cases(tmp_path, name, text):
    path = _write(tmp_path, name, text)
    _refused(lambda: load_cases(path), line=None, field=None, says="an empty dataset is refused")


@pytest.mark.parametrize(
    ("name", "text", "line", "kind"),
    [
        ("list.jsonl", '{"id": "a", "input": 1}\n\n[1, 2]\n', 3, "a list"),
        ("string.jsonl", '"just text"\n', 1, "the string 'just text'"),
        ("rows.yaml", "- id: a\n  input: 1\n- plain words\n", 3, "the string"),
        ("rows.json", '[{"id": "a", "input": 1},\n 5]', 2, "the int 5"),
        ("pf.yaml", "tests:\n  - vars: {}\n  - 12\n", 3, "the int 12"),
    ],
)
def test_a_row_that_is_not_an_object_is_refused(tmp_path, name, text, line, kind):
    path = _write(tmp_path, name, text)
    error = _refused(lambda: load_cases(path), line=line, field=None, says="a row is an object")
    assert kind in str(error)


def test_an_unknown_suffix_is_refused_naming_the_file_and_the_suffixes(tmp_path):
    with pytest.raises(DatasetArgumentError) as caught:
        load_cases(tmp_path / "cases.txt")
    assert "cases.txt" in str(caught.value) and ".jsonl" in str(caught.value)
    assert isinstance(caught.value, InvalidArgumentError)


def test_an_unreadable_file_is_named(tmp_path):
    _refused(
        lambda: load_jsonl(tmp_path / "gone.jsonl"), line=None, field=None, says="cannot be read"
    )
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,input\na,caf\xe9\n".encode("latin-1"))
    _refused(lambda: load_csv(latin), line=None, field=None, says="not UTF-8")


def test_load_cases_reads_every_suffix_the_same_way(tmp_path):
    expected = [Case("a", "hi", {"expected": "hello"})]
    row = {"id": "a", "input": "hi", "expected": "hello"}
    files = {
        "x.jsonl": json.dumps(row),
        "x.ndjson": json.dumps(row),
        "x.json": json.dumps([row]),
        "x.csv": "id,input,expected\na,hi,hello\n",
        "x.TSV": "id\tinput\texpected\na\thi\thello\n",
        "x.yaml": "- {id: a, input: hi, expected: hello}\n",
        "x.yml": "tests:\n  - vars: {input: hi}\n    metadata: {id: a, expected: hello}\n",
    }
    for name, text in files.items():
        path = _write(tmp_path, name, text)
        into = "vars.input" if name.endswith(".yml") else None
        assert load_cases(path, input=into, metadata=["expected"]) == expected, name


def test_the_errors_sit_in_the_one_tree():
    assert issubclass(DatasetFileError, DatasetError)
    assert issubclass(DatasetFileError, InvalidDataError)
    assert issubclass(DatasetArgumentError, InvalidArgumentError)
    assert issubclass(DatasetUnavailableError, vitrine.VitrineError)


def test_loaded_cases_make_a_benchmark_and_ids_are_unique_strings(tmp_path):
    path = _write(tmp_path, "qa.csv", "question,expected\n2+2,4\n3+3,6\n")
    cases = load_cases(path, input="question")
    definition = vitrine.BenchmarkDefinition(
        "qa",
        "1",
        cases,
        [
            vitrine.admit(
                vitrine.check("x")(lambda c, r: vitrine.Observation.measured(1.0, passed=True)),
                vitrine.ChanceFloor.not_derivable("x"),
            )
        ],
    )
    assert [c.id for c in definition.cases] == ["qa-1", "qa-2"]


# --- the command line ---------------------------------------------------------------------


def test_a_suite_whose_dataset_is_broken_exits_2_naming_the_line(tmp_path):
    _write(tmp_path, "qa.jsonl", '{"id": "a", "input": 1}\n{"id": "a", "input": 2}\n')
    _write(
        tmp_path,
        "qa_suite.py",
        """
        from pathlib import Path

        import vitrine
        from vitrine.datasets import load_cases

        EVALUATION = vitrine.Evaluation(
            "qa",
            cases=load_cases(Path(__file__).with_name("qa.jsonl")),
            checks=[lambda case, response: True],
            arms={"echo": lambda case: vitrine.SubjectResponse(answer="x")},
        )
        """,
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "vitrine", "--suite", "qa_suite:EVALUATION", "--list-plans"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "qa.jsonl line 2: field 'id'" in result.stderr


# --- Hugging Face -------------------------------------------------------------------------


def test_an_absent_datasets_package_is_named_with_its_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # an import of it now fails
    with pytest.raises(DatasetUnavailableError, match=r"pip install 'vitrine\[datasets\]'"):
        load_huggingface("squad")


def _hf():
    return pytest.importorskip("datasets", reason="the datasets extra is not installed")


def test_a_loaded_hugging_face_dataset_maps_like_a_file():
    datasets = _hf()
    rows = [
        {"id": "a", "question": "2+2", "answer": "4"},
        {"id": "b", "question": "3+3", "answer": "6"},
    ]
    cases = load_huggingface(datasets.Dataset.from_list(rows), input="question")
    assert cases == [Case("a", "2+2", {"answer": "4"}), Case("b", "3+3", {"answer": "6"})]
    iterable = datasets.Dataset.from_list(rows).to_iterable_dataset()
    assert load_huggingface(iterable, input="question") == cases


def test_a_hugging_face_split_is_chosen_and_rows_are_numbered_by_index():
    datasets = _hf()
    splits = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list([{"q": "t"}]),
            "test": datasets.Dataset.from_list([{"q": "x"}, {"q": "y"}]),
        }
    )
    cases = load_huggingface(splits, split="test", input="q")
    assert [(c.id, c.input) for c in cases] == [("dataset-test-0", "x"), ("dataset-test-1", "y")]
    with pytest.raises(DatasetArgumentError, match="'train', 'test'"):
        load_huggingface(splits, input="q")
    with pytest.raises(DatasetArgumentError, match="no split 'dev'"):
        load_huggingface(splits, split="dev", input="q")
    one = datasets.DatasetDict({"validation": datasets.Dataset.from_list([{"q": "v"}])})
    assert load_huggingface(one, input="q")[0].id == "dataset-validation-0"


def test_a_hugging_face_row_that_cannot_become_a_case_is_named_by_its_index():
    datasets = _hf()
    data = datasets.Dataset.from_list([{"id": "a", "q": "x"}, {"id": "a", "q": "y"}])
    with pytest.raises(DatasetFileError) as caught:
        load_huggingface(data, input="q")
    assert "row 0 and row 1" in str(caught.value)
    assert caught.value.line is None and caught.value.field == "id"
    with pytest.raises(DatasetFileError, match="row 0: field 'input': missing"):
        load_huggingface(data)
    with pytest.raises(DatasetFileError, match="empty dataset"):
        load_huggingface(datasets.Dataset.from_list([]))
    with pytest.raises(WrongTypeError, match="list"):
        load_huggingface([{"id": "a"}])
