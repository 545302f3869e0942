from datetime import UTC, datetime

from speakerflow.graphs import InMemoryIndex, SearchFilter, query_terms


def _docs():
    t = lambda d: datetime(2026, 1, d, tzinfo=UTC)  # noqa: E731
    return [
        {
            "doc_id": "1",
            "kind": "message",
            "speaker": "Ana",
            "text": "Let's go with Porto for the offsite",
            "ts": t(1),
        },
        {
            "doc_id": "2",
            "kind": "message",
            "speaker": "Ben",
            "text": "Porto hotels are cheap",
            "ts": t(2),
        },
        {
            "doc_id": "3",
            "kind": "record",
            "owner": "GROUP",
            "layer": "group_interaction",
            "text": "Offsite in Porto",
            "ts": t(3),
        },
    ]


def test_query_terms_drop_stopwords_and_case():
    assert query_terms("Where is THE offsite?") == ["offsite"]


def test_in_memory_bm25_ranks_and_filters():
    idx = InMemoryIndex()
    idx.add(_docs())
    assert [h.doc_id for h in idx.search("offsite porto", 3)][0] in {"1", "3"}
    assert [h.doc_id for h in idx.search("porto", 5, SearchFilter(speaker="Ben"))] == ["2"]
    assert [h.doc_id for h in idx.search("porto", 5, SearchFilter(kind="record"))] == ["3"]
    assert [
        h.doc_id
        for h in idx.search("porto", 5, SearchFilter(until=datetime(2026, 1, 1, tzinfo=UTC)))
    ] == ["1"]
    assert idx.search("the of", 5) == []
