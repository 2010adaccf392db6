-- expect: new-unique
ALTER TABLE nodes ADD COLUMN serial_number text UNIQUE;
