-- Issue 31 (disk): the artifact full-text index with `body` as its first column. An FTS5
-- position list names its column only for columns after the first, two bytes per document
-- and term; most of an artifact's terms are in its body, so ordering `body` first makes the
-- index about a third smaller (see BENCHMARKS.md, issue 31). The columns, tokenizer and
-- `bm25()` weights (title 5, body 1) are the same, so every score is the same. The table
-- is contentless: the rows are rebuilt from the revisions right after this SQL, in the same
-- transaction (`migrate::rebuild_artifact_fts`).
DROP TABLE artifact_fts;
CREATE VIRTUAL TABLE artifact_fts USING fts5 (
    body, title,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
