import { Type } from '@sinclair/typebox';

/**
 * POST /account/deletions: the person types one of the account's verified identifiers (an email
 * address, or a phone number as they would write it), or DELETE when the account has none, so a
 * stolen session with a live elevation cannot delete by accident and a slip of the hand cannot
 * either (docs/api.md, "Delete my account").
 */
export const AccountDeletionBody = Type.Object(
  {
    identifier: Type.String({
      minLength: 1,
      maxLength: 320,
      description:
        "One of the account's verified identifiers, as typed (an email address in any case; a phone number " +
        'in its national or international form); `DELETE` when the account has no identifier.',
    }),
  },
  { additionalProperties: false },
);
