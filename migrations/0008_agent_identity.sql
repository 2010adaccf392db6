-- The client certificates the platform's CA issued to node agents at enrolment. An agent
-- connects with one; the listener accepts it only while it is the node's current
-- certificate (not revoked, not superseded by a later enrolment) and the node is not
-- retired. Kept after revocation: an audit of which key spoke for a node when.
CREATE TABLE node_certificates (
  serial text PRIMARY KEY CHECK (serial ~ '^[0-9a-f]{2,40}$'),
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  sha256_fingerprint text NOT NULL UNIQUE CHECK (sha256_fingerprint ~ '^[0-9a-f]{64}$'),
  not_before timestamptz NOT NULL,
  not_after timestamptz NOT NULL CHECK (not_after > not_before),
  issued_at timestamptz NOT NULL,
  revoked_at timestamptz,
  revoked_reason text CHECK (length(revoked_reason) <= 500),
  CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL))
);
-- At most one current certificate per node: a new enrolment revokes the last one first.
CREATE UNIQUE INDEX node_certificates_current_idx ON node_certificates (node_id)
  WHERE revoked_at IS NULL;

-- A new task for a node's agent wakes the replica its agent is connected to, whichever
-- replica made the task: the payload names the node. The task table stays the truth; a
-- replica that missed the notification (its listener reconnecting) sends the task the next
-- time the agent connects or a later notification for the node arrives.
CREATE FUNCTION notify_agent_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_agent_tasks', NEW.node_id);
  RETURN NULL;
END
$$;
CREATE TRIGGER agent_tasks_created
  AFTER INSERT ON agent_tasks FOR EACH ROW EXECUTE FUNCTION notify_agent_task();
