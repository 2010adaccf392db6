-- expect: rename
ALTER SEQUENCE ssh_certificate_serials RENAME TO certificate_serials;
