-- expect: new-unique
ALTER TABLE nodes ADD CONSTRAINT nodes_hostname_unique UNIQUE (hostname);
