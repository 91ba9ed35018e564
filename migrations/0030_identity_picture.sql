-- The identity's picture (issue 46, item 3): uploaded by the person (PUT /account/picture), decoded,
-- stripped of every metadata and re-encoded by the service (identities/picture.ts), so the bytes
-- here are always the service's own WebP, never what was sent. One per identity; `id` is new on
-- every upload, so the public URL (/api/v1/pictures/{id}, cached as immutable) changes with the
-- picture, and an old URL stops answering. Deleted by DELETE /account/picture and by erasure.
CREATE TABLE identity_pictures (
  identity_id uuid PRIMARY KEY REFERENCES identities (id) ON DELETE CASCADE,
  id uuid NOT NULL UNIQUE,
  bytes bytea NOT NULL CONSTRAINT identity_pictures_bytes_size CHECK (octet_length(bytes) BETWEEN 1 AND 1048576),
  content_type text NOT NULL CONSTRAINT identity_pictures_content_type CHECK (content_type IN ('image/webp', 'image/png')),
  created_at timestamptz NOT NULL
);
