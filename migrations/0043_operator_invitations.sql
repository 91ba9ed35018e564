-- Invitations sent by an operator (docs/admin.md, "The console's pages"; docs/decisions.md,
-- "Console: webhook creation, recovery and invitations"): POST /admin/v1/organizations/{id}/invitations
-- is sent by the service, not by a member, so invited_by is null. The operator is named by the
-- audit record and the event's actor (`operator:<id>` or `admin:<key>`), not by a row an invitee
-- reads: the invitation page says "You are invited" as it does once an inviter is erased.
ALTER TABLE organization_invitations ALTER COLUMN invited_by DROP NOT NULL;
