-- Sign-in and sign-up by code (issue 45): the channel the code went out on, kept with the session so
-- the OpenID Provider's ID tokens say amr ["otp", "email"] or ["otp", "sms"] (RFC 8176); null for
-- every other way a session opens.
ALTER TABLE sessions ADD COLUMN channel text CHECK (channel IN ('email', 'phone'));
