-- The node's sshd as a field of its own: the port engineers reach it on (until now an
-- `ssh_port` label, which only the architecture notes named; a valid one moves here and
-- leaves the labels), and the public half of the agent's own SSH probe key, as its latest
-- hello reported it: install_access signs a short-lived probe certificate for that key, and
-- the agent logs in with it to prove that sshd accepts the rental's access (NULL: the node
-- reported none, and there is nothing to probe with).
ALTER TABLE nodes
  ADD COLUMN ssh_port integer NOT NULL DEFAULT 22 CHECK (ssh_port BETWEEN 1 AND 65535),
  ADD COLUMN ssh_probe_key text
    CHECK (ssh_probe_key IS NULL OR ssh_probe_key ~ '^ssh-ed25519 [A-Za-z0-9+/=]{1,200}$');

-- At most five digits, so the cast cannot fail whatever order the conditions run in.
UPDATE nodes
   SET ssh_port = (labels->>'ssh_port')::integer, labels = labels - 'ssh_port'
 WHERE labels->>'ssh_port' ~ '^[0-9]{1,5}$'
   AND (labels->>'ssh_port')::integer BETWEEN 1 AND 65535;
