-- trainwatch store, version 10: a CRC-32C of the last bytes (up to 4 KiB) before each
-- source's committed offset, committed with the offset. Checked before reading on: a file
-- rewritten in place that keeps its first bytes (its head) and grows past the old offset is
-- a new generation, not more of the old one. NULL: not known (a row from before version 10).
ALTER TABLE sources ADD COLUMN tail_crc INTEGER;
