-- Bringing users in (docs/import.md) and the hashes they bring (docs/decisions.md, "Imported
-- password hashes").

-- The source system's id of an imported identity: kept, searchable, and what makes an import
-- idempotent (a second run finds the identity by it instead of creating another). Unique among live
-- identities that have one.
ALTER TABLE identities
  ADD COLUMN external_id text
    CONSTRAINT identities_external_id_shape CHECK (
      char_length(external_id) BETWEEN 1 AND 255
      AND external_id !~ '[\u0001-\u001f\u007f]'
    );
CREATE UNIQUE INDEX identities_external_id ON identities (external_id) WHERE external_id IS NOT NULL;

-- One row per imported hash profile (scheme and cost: `bcrypt:12`, `pbkdf2-sha256:27500`), written
-- by the import when it first meets the profile. The sample is a hash of a random password with that
-- profile, never a person's: the password sign-in verifies it to measure the profile's time and
-- pads every refusal to the slowest profile present, so a refusal tells neither an imported hash nor
-- an absent account (docs/decisions.md, "Imported password hashes", equal time).
CREATE TABLE password_hash_profiles (
  profile text PRIMARY KEY,
  sample_hash text NOT NULL,
  created_at timestamptz NOT NULL
);
