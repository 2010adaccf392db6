-- expect: drop
ALTER TABLE nodes ADD COLUMN rack text, DROP COLUMN labels;
