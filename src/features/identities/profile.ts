import { Type } from '@sinclair/typebox';

/*
 * The identity's name (migration 0029, issue 46 item 3): a given name, a family name and a display
 * name, each optional. The display name is what applications show (the OpenID `name` claim);
 * unset, they are shown the given and family names joined. The picture is one more
 * nullable field beside these three (PictureField, migration 0030: its own table, identities/
 * picture.ts) in the views of one identity.
 */

/** The longest name kept, in characters (migration 0029's CHECKs). */
export const NAME_MAX_LENGTH = 100;

/**
 * What a name may not hold: C0 and C1 controls, DEL, the line and paragraph separators, and the
 * bidirectional overrides and isolates (a name that reorders the text around it). The same set as
 * migration 0029's CHECKs.
 */
const FORBIDDEN = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
const FORBIDDEN_RE = new RegExp(`[${FORBIDDEN}]`, 'gu');

/** A name in a request body: a string of printable characters, or null to clear it. */
export const NameInput = Type.Union(
  [
    Type.String({
      maxLength: NAME_MAX_LENGTH,
      pattern: `^[^${FORBIDDEN}]*$`,
      description: `at most ${NAME_MAX_LENGTH} characters, no control character; trimmed, and empty clears it`,
    }),
    Type.Null(),
  ],
  { description: 'a string sets the name (trimmed; empty or null clears it)' },
);

/** A name as read: null when unset. */
const NameOutput = Type.Union([Type.String(), Type.Null()]);

/** The name fields of every view of an identity (account, export, admin, events). */
export const ProfileFields = {
  givenName: NameOutput,
  familyName: NameOutput,
  displayName: Type.Union([Type.String(), Type.Null()], {
    description: 'what applications show; null when the person set none (they then see `name`)',
  }),
  name: Type.Union([Type.String(), Type.Null()], {
    description:
      'the name applications are shown (the OpenID `name` claim): displayName, else the given and ' +
      'family names joined, else null',
  }),
};

/**
 * The identity's picture where a view shows it (account, export, admin detail): its absolute
 * address on PUBLIC_ORIGIN, new with every upload, or null (the pages then show initials).
 */
export const PictureField = Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
  description:
    'the picture’s public address (GET /api/v1/pictures/{pictureId}, a 256×256 WebP); a new ' +
    'upload gives a new address; null when the person has none',
});

export interface ProfileNames {
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
}

/** The name applications show: the display name, else given and family joined, else null. */
export function shownName(p: ProfileNames): string | null {
  if (p.displayName) return p.displayName;
  const joined = [p.givenName, p.familyName].filter(Boolean).join(' ');
  return joined === '' ? null : joined;
}

/** The four name fields of a view, from a row's three columns. */
export function profileJson(p: ProfileNames) {
  return {
    givenName: p.givenName,
    familyName: p.familyName,
    displayName: p.displayName,
    name: shownName(p),
  };
}

/** A name from a request (already validated): trimmed, empty as null. */
export function normaliseName(value: string | null): string | null {
  const trimmed = value?.trim() ?? '';
  return trimmed === '' ? null : trimmed;
}

/**
 * A name from an upstream provider's claims, which the service did not write: forbidden characters
 * dropped, whitespace runs collapsed, cut to NAME_MAX_LENGTH characters; null when nothing is left.
 */
export function nameFromClaim(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const clean = value.replace(FORBIDDEN_RE, ' ').replace(/\s+/gu, ' ').trim();
  if (clean === '') return null;
  return Array.from(clean).slice(0, NAME_MAX_LENGTH).join('').trim();
}
