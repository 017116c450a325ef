-- trainwatch store, version 4: each source's first bytes (up to 64), so that a new file the
-- filesystem gives a deleted file's inode number is not taken for that file moved, and a file
-- truncated and rewritten past its old offset is seen as rewritten.
ALTER TABLE sources ADD COLUMN head BLOB NOT NULL DEFAULT x'';
