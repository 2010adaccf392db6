-- expect: new-unique
CREATE UNIQUE INDEX CONCURRENTLY nodes_hostname_key ON ONLY nodes (hostname);
