import pyarrow as pa
import pytest
from pydantic import ValidationError

from speakerflow.ops import (
    ForEach,
    Lambda,
    MissingDependencyError,
    Operator,
    OperatorConfig,
    Pipeline,
    SchemaMismatchError,
)
from speakerflow.ops.core import registry


class Words(Operator):
    name = "words"
    consumes = ("text",)
    produces = pa.schema([("text", pa.string()), ("words", pa.int64())])

    class Config(OperatorConfig):
        minimum: int = 0

    def run(self, table, ctx):
        counts = [len(t.split()) for t in table["text"].to_pylist()]
        keep = [i for i, c in enumerate(counts) if c >= self.config.minimum]
        self.stats.rejects += len(counts) - len(keep)
        out = table.append_column("words", pa.array(counts))
        return out.take(pa.array(keep, type=pa.int64()))


def test_operator_meters_calls_and_rejects():
    op = Words(minimum=2)
    out = op(pa.table({"text": ["one", "two words", "three more words"]}))
    assert out["words"].to_pylist() == [2, 3]
    assert (op.stats.calls, op.stats.rows_in, op.stats.rows_out, op.stats.rejects) == (1, 3, 2, 1)
    assert op.stats.as_metadata()["rows_out"] == 2


def test_config_is_frozen_and_strict():
    op = Words(minimum=1)
    with pytest.raises(ValidationError, match="frozen"):
        op.config.minimum = 3
    with pytest.raises(ValidationError, match="unknown"):
        Words(unknown=1)


def test_missing_columns_fail_with_names():
    with pytest.raises(SchemaMismatchError, match="text"):
        Words()(pa.table({"body": ["x"]}))


def test_pipeline_checks_schemas_at_construction():
    double = Lambda(
        lambda t, c: t.append_column("double", pa.array([w * 2 for w in t["words"].to_pylist()])),
        name="double",
        consumes=("words",),
        produces=pa.schema([("words", pa.int64()), ("double", pa.int64())]),
    )
    pipe = Words() >> double
    assert pipe(pa.table({"text": ["a b c"]}))["double"].to_pylist() == [6]
    assert set(pipe.stats()) == {"words", "double"}
    needs_score = Lambda(lambda t, c: t, name="needs", consumes=("score",))
    with pytest.raises(SchemaMismatchError, match="score"):
        Pipeline(Words(), needs_score)


def test_registry_refuses_duplicates_and_reserved_names():
    class Once(Operator):
        name = "once-only-test"

    registry.register(Once)
    assert registry.get("once-only-test") is Once

    class Twin(Operator):
        name = "once-only-test"

    with pytest.raises(ValueError, match="already registered"):
        registry.register(Twin)

    class Reserved(Operator):
        name = "pipeline"

    with pytest.raises(ValueError, match="reserved"):
        registry.register(Reserved)


def test_optional_dependency_checked_at_construction():
    class NeedsGhost(Operator):
        name = "ghost"
        requires = (("no_such_module_xyz", "speakerflow[ghost]"),)

    with pytest.raises(MissingDependencyError, match="pip install speakerflow\\[ghost\\]"):
        NeedsGhost()


def test_passthrough_columns_reach_later_operators_and_are_enforced():
    class Tag(Operator):
        name = "tag"
        consumes = ("text",)
        produces = pa.schema([("tag", pa.string())])
        passthrough = True

        def run(self, table, ctx):
            return table.append_column("tag", pa.array(["t"] * table.num_rows))

    needs_both = Lambda(
        lambda t, c: t.select(["text", "tag"]),
        name="both",
        consumes=("text", "tag"),
        produces=pa.schema([("text", pa.string()), ("tag", pa.string())]),
    )
    out = (Tag() >> needs_both)(pa.table({"text": ["a"], "id": [1]}))
    assert out.column_names == ["text", "tag"]

    class Drops(Tag):
        name = "drops"

        def run(self, table, ctx):
            return pa.table({"tag": ["t"] * table.num_rows})

    with pytest.raises(SchemaMismatchError, match="text"):
        Drops()(pa.table({"text": ["a"]}))


def test_for_each_runs_the_inner_pipeline_per_key_in_order():
    seen = []

    def record(t, c):
        seen.append(t["k"].to_pylist())
        c.state["total"] = c.state.get("total", 0) + t.num_rows
        return t.append_column("so_far", pa.array([c.state["total"]] * t.num_rows))

    inner = Lambda(
        record,
        name="record",
        consumes=("k",),
        produces=pa.schema([("k", pa.string()), ("so_far", pa.int64())]),
    )
    each = ForEach("k", inner)
    out = Pipeline(each)(pa.table({"k": ["b", "a", "b"]}))
    assert seen == [["b", "b"], ["a"]]
    assert out["so_far"].to_pylist() == [2, 2, 3]
    assert Pipeline(each).stats()["for_each_k/record"]["calls"] == 2


def test_docstring_examples_run():
    import doctest

    from speakerflow.ops.core import base, batch, for_each

    for module in (base, batch, for_each):
        assert doctest.testmod(module).failed == 0
