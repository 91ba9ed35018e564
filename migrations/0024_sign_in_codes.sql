-- Sign-in by code (issue 45): a fourth out-of-band purpose, 'sign_in', on the one challenge table
-- (issued to a verified identifier, answered by a constant-time match, spent by compare-and-set).
ALTER TABLE challenges DROP CONSTRAINT challenges_purpose_check;
ALTER TABLE challenges ADD CONSTRAINT challenges_purpose_check
  CHECK (purpose IN ('sign_up', 'sign_in_method', 'password_recovery', 'step_up', 'sign_in'));
