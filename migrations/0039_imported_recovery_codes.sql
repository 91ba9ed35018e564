-- Recovery codes brought by an import (docs/import.md, "Recovery codes"; docs/decisions.md,
-- "Imported recovery codes"): code_hash then holds the source system's hash of the code in a form
-- the password verifiers read (bcrypt, PBKDF2, scrypt, Argon2 PHC, salted SHA), not this service's
-- keyed hash, and a second step compares the code with each of them when no keyed hash matches.
ALTER TABLE recovery_codes ADD COLUMN imported boolean NOT NULL DEFAULT false;
