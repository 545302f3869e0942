"""``ForEach(key, pipeline)``: an inner pipeline run once per value of a key column.

>>> import pyarrow as pa
>>> from speakerflow.ops import Lambda
>>> up = Lambda(lambda t, c: t.set_column(0, "text", pa.array([s.upper() for s in t["text"].to_pylist()])),
...             name="up", consumes=("text",), produces=pa.schema([("text", pa.string())]))
>>> n = Lambda(lambda t, c: t.append_column("n", pa.array([len(s) for s in t["text"].to_pylist()])),
...            name="n", consumes=("text",), produces=pa.schema([("text", pa.string()), ("n", pa.int64())]))
>>> (up >> n)(pa.table({"text": ["ab"]})).to_pylist()
[{'text': 'AB', 'n': 2}]
>>> ForEach("text", up >> n)(pa.table({"text": ["a", "bc", "a"]})).to_pylist()
[{'text': 'A', 'n': 1}, {'text': 'A', 'n': 1}, {'text': 'BC', 'n': 2}]
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from speakerflow.ops.core.base import Context, Operator, Pipeline


class ForEach(Operator):
    """Run an inner pipeline once per value of a key column, in order of first appearance.

    For steps that must see the effect of the previous part before the next one, e.g. the
    Writer, which reads the memory heads that earlier segments just wrote:
    ``Segmenter() >> ForEach("segment_id", Writer(...) >> Validate() >> Upsert())``.
    The outputs are concatenated; every inner operator keeps its own stats. ``progress``,
    when set, is the label of a tqdm bar over the key values; ``on_step``, when set, is
    called as ``on_step(done, total, rows)`` after each key value (``rows``: the input rows
    done so far).
    """

    name = "for_each"

    def __init__(
        self,
        key: str,
        inner: Operator | Pipeline,
        name: str | None = None,
        progress: str | None = None,
        on_step: Callable[[int, int, int], None] | None = None,
    ):
        self.key = key
        self.progress = progress
        self.on_step = on_step
        self.inner = inner if isinstance(inner, Pipeline) else Pipeline(inner)
        self._name = name or f"for_each_{key}"
        self.consumes = tuple(dict.fromkeys((key, *self.inner.consumes)))  # type: ignore[misc]
        self.produces = self.inner.produces  # type: ignore[misc]
        super().__init__()

    @property
    def op_name(self) -> str:
        return self._name

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        keys = list(dict.fromkeys(table[self.key].to_pylist()))
        if self.progress:
            from tqdm import tqdm

            keys = tqdm(keys, desc=self.progress, unit=self.key)
        outs, rows = [], 0
        for done, k in enumerate(keys, start=1):
            part = table.filter(pc.equal(table[self.key], k))
            outs.append(self.inner(part, ctx))
            rows += part.num_rows
            if self.on_step is not None:
                self.on_step(done, len(keys), rows)
        outs = [o for o in outs if o.num_rows]
        if not outs:
            return self.produces.empty_table()
        return pa.concat_tables(outs, promote_options="permissive")

    def fresh(self) -> ForEach:
        op = super().fresh()
        assert isinstance(op, ForEach)
        op.inner = self.inner.fresh()
        return op

    def nested_stats(self) -> dict[str, dict[str, float | int]]:
        return self.inner.stats()
