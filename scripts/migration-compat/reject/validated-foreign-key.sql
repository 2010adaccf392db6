-- expect: validated-constraint
ALTER TABLE rentals ADD FOREIGN KEY (image_id) REFERENCES images (id);
