-- The user certificates the platform's SSH CA issued (identity/ssh_certificate_authority.h):
-- each serial once, from a sequence, and a record of who asked for which key on which
-- rental, for the audit and for sshd's logs, which name the serial and key id.
CREATE SEQUENCE ssh_certificate_serials AS bigint START WITH 1;

CREATE TABLE ssh_certificates (
  serial bigint PRIMARY KEY,
  rental_id text NOT NULL REFERENCES rentals (id) ON DELETE CASCADE,
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  user_id text REFERENCES users (id) ON DELETE SET NULL,
  token_id text,
  key_type text NOT NULL,
  key_fingerprint text NOT NULL CHECK (key_fingerprint ~ '^SHA256:[A-Za-z0-9+/]{43}$'),
  key_id text NOT NULL CHECK (length(key_id) BETWEEN 1 AND 255),
  principals text[] NOT NULL CHECK (cardinality(principals) >= 1),
  valid_after timestamptz NOT NULL,
  valid_before timestamptz NOT NULL CHECK (valid_before > valid_after),
  issued_at timestamptz NOT NULL
);
CREATE INDEX ssh_certificates_by_rental ON ssh_certificates (rental_id, serial);
