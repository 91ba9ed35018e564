-- The identity's name (issue 46, item 3): what the person calls themself, edited by PATCH /account,
-- filled at sign-up from an upstream provider's claims, returned by the OpenID Provider's `profile`
-- scope (`given_name`, `family_name`, `name`) and cleared by erasure. Each is optional: null when
-- unset (never the empty string). `display_name` is what applications show; unset, they are shown
-- the given and family names joined. The API's schema refuses the same shapes (identities/schemas.ts
-- ProfileNameSchema): at most 100 characters, no control, line-separator or bidirectional-override
-- character. A picture would be another nullable column beside these.
ALTER TABLE identities
  ADD COLUMN given_name text
    CONSTRAINT identities_given_name_shape CHECK (
      char_length(given_name) BETWEEN 1 AND 100
      AND given_name !~ '[\u0001-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]'
    ),
  ADD COLUMN family_name text
    CONSTRAINT identities_family_name_shape CHECK (
      char_length(family_name) BETWEEN 1 AND 100
      AND family_name !~ '[\u0001-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]'
    ),
  ADD COLUMN display_name text
    CONSTRAINT identities_display_name_shape CHECK (
      char_length(display_name) BETWEEN 1 AND 100
      AND display_name !~ '[\u0001-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]'
    );
