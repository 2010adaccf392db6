-- expect: validated-constraint
ALTER TABLE rentals ADD CONSTRAINT rentals_short CHECK (days <= 90);
