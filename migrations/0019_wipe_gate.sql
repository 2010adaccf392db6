-- The wipe gate (DESIGN.md "Shapes for what is being built next", node trust): a GPU a
-- tenant could reach is unwiped from the moment its rental starts provisioning until a wipe
-- task covering it, made after that moment, succeeds. The lifecycle never starts a rental on
-- an unwiped GPU (it moves the rental elsewhere for the same period, or cancels it free).
ALTER TABLE gpus ADD COLUMN unwiped_since timestamptz;
-- The few unwiped GPUs, read at every start and relocation.
CREATE INDEX gpus_unwiped_idx ON gpus (node_id, idx) WHERE unwiped_since IS NOT NULL;

-- When the agent must have started the task at the latest (NULL: the delivery's own
-- default). An install_access task carrying a probe certificate is due before the
-- certificate expires, so an agent busy past that fails it rather than start it.
ALTER TABLE agent_tasks ADD COLUMN deadline timestamptz;

-- GPUs under rentals that run now were reachable since their rental changed state last:
-- their wipe (made on or after that moment) clears them.
UPDATE gpus g SET unwiped_since = r.state_changed_at
  FROM rentals r
 WHERE r.state IN ('provisioning', 'active', 'releasing')
   AND g.node_id = r.node_id AND g.idx = ANY (r.gpu_indices);
