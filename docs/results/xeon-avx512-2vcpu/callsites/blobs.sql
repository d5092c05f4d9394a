PRAGMA page_size=65536;
PRAGMA journal_mode=OFF;
PRAGMA synchronous=OFF;
CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<256)
INSERT INTO t SELECT i, randomblob(1048576) FROM n;
SELECT sum(length(hex(substr(b, 1, 4096)))) FROM t;
CREATE TABLE u AS SELECT id, b FROM t ORDER BY id DESC;
SELECT count(*), sum(length(b)) FROM u WHERE b <> zeroblob(1048576);
