-- Each reported host key's certificate from the platform's SSH host CA, signed at the hello
-- that reported it for the node's host name: installed on the node by install_access
-- (sshd's HostCertificate), so that a known_hosts line `@cert-authority` trusts the node.
ALTER TABLE node_ssh_host_keys
  ADD COLUMN certificate text CHECK (certificate IS NULL OR length(certificate) <= 16384);
