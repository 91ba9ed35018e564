-- Sign-in links (issue 45): the message of a sign-in code also carries a link, the same challenge in
-- another form. A challenge spent by its link records whether the browser that opened the link was
-- the one that asked for the code ('same') or another ('other'), so the asking tab can tell its
-- person where the sign-in finished. Null for every challenge spent by its code, or not spent.
ALTER TABLE challenges ADD COLUMN link_browser text CHECK (link_browser IN ('same', 'other'));
ALTER TABLE challenges ADD CONSTRAINT challenges_link_browser_shape
  CHECK (link_browser IS NULL OR (purpose = 'sign_in' AND spent_at IS NOT NULL));
