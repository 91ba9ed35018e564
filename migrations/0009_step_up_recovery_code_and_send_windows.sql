-- A step-up may be answered with a recovery code (contract 3): a third channel, with no code of
-- its own (the recovery code is the proof), like the second_factor channel.
ALTER TABLE challenges DROP CONSTRAINT challenges_channel_check;
ALTER TABLE challenges ADD CONSTRAINT challenges_channel_check
  CHECK (channel IN ('second_factor', 'identifier', 'recovery_code'));

-- Fixed windows counting messages sent per subject (a step-up's code per identity and per client
-- address, contract 3: SENDS_A_MESSAGE). The key is a keyed hash of the subject.
CREATE TABLE send_windows (
  key text PRIMARY KEY,
  window_started_at timestamptz NOT NULL,
  sent integer NOT NULL CHECK (sent > 0)
);
