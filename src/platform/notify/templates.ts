import type { Locale } from '../../shared/locales.js';

/*
 * Every message the service sends a person, in each language of src/shared/locales.ts (the hosted
 * pages'), English and French side by side: a kind without its French text is a type error, and
 * test/platform/message-templates.test.ts renders every kind in both languages and fails when the
 * French text is the English one. The language is the recipient identity's (identities.locale); a
 * message to an address with no identity yet is in the language of the request that caused it
 * (docs/messages.md). Every message ends with the product's name and, when configured, its support
 * link (BRAND_NAME, BRAND_SUPPORT_URL): the only link a security notice ever carries, and never one
 * that signs anyone in.
 */

/** The brand every message carries (BRAND_NAME, BRAND_SUPPORT_URL). */
export interface MessageBrand {
  /** The product's name; unset (`named` false): "Your account" in the message's language. */
  name: string;
  named: boolean;
  supportUrl?: string;
}

export type CodePurpose = 'sign_up' | 'sign_in_method' | 'password_recovery' | 'step_up' | 'sign_in';

/** What a security notice says of one change or sign-in (a queued notice's fields). */
export interface NoticeLine {
  kind: string;
  occurredAt: Date;
  device: string | null;
  ipAddress: string | null;
}

export type NoticeKind =
  | 'password_changed'
  | 'password_recovered'
  | 'password_removed'
  | 'authenticator_added'
  | 'authenticator_removed'
  | 'passkey_added'
  | 'passkey_removed'
  | 'recovery_codes_issued'
  | 'email_added'
  | 'phone_added'
  | 'identifier_removed'
  | 'provider_linked'
  | 'provider_unlinked';

/** Every kind of message, as the table test walks them. */
export const MESSAGE_KINDS = [
  'code.sign_up',
  'code.sign_in_method',
  'code.password_recovery',
  'code.step_up',
  'code.sign_in',
  'invitation',
  'notice.changes.email',
  'notice.changes.sms',
  'notice.sign_in',
  'notice.sign_up_existing',
  'notice.account_deleted.email',
  'notice.account_deleted.sms',
] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

interface Wording {
  product: string;
  signature: (product: string) => string;
  help: (url: string) => string;
  codes: Record<CodePurpose, { subject: string; lead: string }>;
  /** Before a sign-in code's link (SIGN_IN_LINKS): the page it opens asks before signing in. */
  signInLink: string;
  expiresIn: (minutes: number) => string;
  ignore: string;
  invitation: {
    subject: (organization: string) => string;
    lead: (organization: string, role: string) => string;
    open: string;
    expires: (days: number) => string;
  };
  notices: {
    what: Record<NoticeKind, string>;
    short: Record<NoticeKind, string>;
    otherChange: string;
    otherShort: string;
    changedOne: string;
    changedMany: (n: number) => string;
    /** The labels, with their colon (French puts a space before it). */
    when: string;
    device: string;
    fromAddress: string;
    from: string;
    unknownAddress: string;
    wasYou: string;
    changeNotYou: string;
    changeSubjectOne: string;
    changeSubjectMany: string;
    signInOne: string;
    signInMany: (n: number) => string;
    signInNotYou: string;
    signInSubjectOne: string;
    signInSubjectMany: string;
    sms: (what: string) => string;
  };
  existingAccount: { subject: string; text: string };
  deletion: {
    subject: string;
    lead: string;
    gone: string;
    again: string;
    notYou: string;
    sms: string;
  };
  /** A device description (src/features/sessions/devices.ts, in English) in this language. */
  device: (description: string) => string;
}

const en: Wording = {
  product: 'Your account',
  signature: (product) => `— ${product}`,
  help: (url) => `Help: ${url}`,
  codes: {
    sign_up: { subject: 'Your sign-up code', lead: 'Your sign-up verification code is' },
    sign_in_method: {
      subject: 'Your verification code',
      lead: 'Your code to confirm this new sign-in method is',
    },
    password_recovery: { subject: 'Your password recovery code', lead: 'Your password recovery code is' },
    step_up: { subject: 'Your confirmation code', lead: 'Your code to confirm this sensitive action is' },
    sign_in: { subject: 'Your sign-in code', lead: 'Your code to sign in is' },
  },
  signInLink: 'Or open this link, then press Continue:',
  expiresIn: (minutes) => `It expires in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`,
  ignore: 'If you did not ask for it, ignore this message.',
  invitation: {
    subject: (organization) => `You are invited to join ${organization}`,
    lead: (organization, role) => `You are invited to join the organization "${organization}" as ${role}.`,
    open: 'Open this link to accept (sign in, or sign up, with this address first):',
    expires: (days) =>
      `It expires in ${days} ${days === 1 ? 'day' : 'days'}. If you did not expect it, ignore this message.`,
  },
  notices: {
    what: {
      password_changed: 'Your password was changed.',
      password_recovered: 'Your password was reset with a recovery code ("Forgot password").',
      password_removed: 'Your password was removed.',
      authenticator_added: 'An authenticator app was added for 2-step verification.',
      authenticator_removed: 'An authenticator app was removed from 2-step verification.',
      passkey_added: 'A passkey was added.',
      passkey_removed: 'A passkey was removed.',
      recovery_codes_issued: 'New recovery codes were created; the earlier ones no longer work.',
      email_added: 'An email address was added.',
      phone_added: 'A phone number was added.',
      identifier_removed: 'An email address or phone number was removed.',
      provider_linked: 'A sign-in with another account (such as Google) was linked.',
      provider_unlinked: 'A sign-in with another account (such as Google) was removed.',
    },
    short: {
      password_changed: 'password changed',
      password_recovered: 'password reset',
      password_removed: 'password removed',
      authenticator_added: 'authenticator added',
      authenticator_removed: 'authenticator removed',
      passkey_added: 'passkey added',
      passkey_removed: 'passkey removed',
      recovery_codes_issued: 'new recovery codes',
      email_added: 'email added',
      phone_added: 'phone number added',
      identifier_removed: 'email or phone removed',
      provider_linked: 'sign-in account linked',
      provider_unlinked: 'sign-in account removed',
    },
    otherChange: 'A security setting of your account was changed.',
    otherShort: 'security setting changed',
    changedOne: 'A security setting of your account was changed:',
    changedMany: (n) => `${n} security settings of your account were changed:`,
    when: 'When:',
    device: 'Device:',
    fromAddress: 'From address:',
    from: 'From:',
    unknownAddress: 'unknown address',
    wasYou: 'If this was you, there is nothing to do.',
    changeNotYou:
      "If this wasn't you, sign in and secure your account (change your password and sign out everywhere), or contact support.",
    changeSubjectOne: 'A security change to your account',
    changeSubjectMany: 'Security changes to your account',
    signInOne: 'Someone signed in to your account from a device or network not seen in the last 90 days.',
    signInMany: (n) =>
      `${n} sign-ins to your account came from devices or networks not seen in the last 90 days.`,
    signInNotYou:
      'If it was not, sign in, end that session under Devices (or sign out everywhere), and change your password.',
    signInSubjectOne: 'New sign-in to your account',
    signInSubjectMany: 'New sign-ins to your account',
    sms: (what) =>
      `Security change to your account: ${what}. Not you? Sign in and secure your account or contact support.`,
  },
  existingAccount: {
    subject: 'You already have an account',
    text:
      'Someone asked to create an account with this address, but it already has one. ' +
      'Sign in with your password, or recover it if you have forgotten it. ' +
      'If you did not ask for this, ignore this message.',
  },
  deletion: {
    subject: 'Your account was deleted',
    lead: 'Your account was deleted at your request.',
    gone: 'Its addresses, password, passkeys, authenticators, recovery codes, linked accounts and sessions are gone, and its memberships of organizations ended.',
    again: 'Signing up again with this address makes a new, empty account.',
    notYou: "If this wasn't you, contact support at once.",
    sms: 'Your account was deleted at your request. Not you? Contact support at once.',
  },
  device: (description) => description,
};

const fr: Wording = {
  product: 'Votre compte',
  signature: (product) => `— ${product}`,
  help: (url) => `Aide : ${url}`,
  codes: {
    sign_up: { subject: "Votre code d'inscription", lead: "Votre code de vérification d'inscription est" },
    sign_in_method: {
      subject: 'Votre code de vérification',
      lead: 'Votre code pour confirmer ce nouveau moyen de connexion est',
    },
    password_recovery: {
      subject: 'Votre code de récupération du mot de passe',
      lead: 'Votre code de récupération du mot de passe est',
    },
    step_up: {
      subject: 'Votre code de confirmation',
      lead: 'Votre code pour confirmer cette action sensible est',
    },
    sign_in: { subject: 'Votre code de connexion', lead: 'Votre code pour vous connecter est' },
  },
  signInLink: 'Ou ouvrez ce lien, puis appuyez sur Continuer :',
  expiresIn: (minutes) => `Il expire dans ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`,
  ignore: "Si vous ne l'avez pas demandé, ignorez ce message.",
  invitation: {
    subject: (organization) => `Vous êtes invité à rejoindre ${organization}`,
    lead: (organization, role) =>
      `Vous êtes invité à rejoindre l'organisation « ${organization} » avec le rôle ${role}.`,
    open: "Ouvrez ce lien pour accepter (connectez-vous, ou inscrivez-vous, avec cette adresse d'abord) :",
    expires: (days) =>
      `Il expire dans ${days} ${days === 1 ? 'jour' : 'jours'}. Si vous ne l'attendiez pas, ignorez ce message.`,
  },
  notices: {
    what: {
      password_changed: 'Votre mot de passe a été modifié.',
      password_recovered:
        'Votre mot de passe a été réinitialisé avec un code de récupération (« Mot de passe oublié »).',
      password_removed: 'Votre mot de passe a été supprimé.',
      authenticator_added: "Une application d'authentification a été ajoutée à la validation en 2 étapes.",
      authenticator_removed: "Une application d'authentification a été retirée de la validation en 2 étapes.",
      passkey_added: "Une clé d'accès a été ajoutée.",
      passkey_removed: "Une clé d'accès a été supprimée.",
      recovery_codes_issued:
        'De nouveaux codes de récupération ont été créés ; les précédents ne fonctionnent plus.',
      email_added: 'Une adresse e-mail a été ajoutée.',
      phone_added: 'Un numéro de téléphone a été ajouté.',
      identifier_removed: 'Une adresse e-mail ou un numéro de téléphone a été supprimé.',
      provider_linked: 'Une connexion avec un autre compte (comme Google) a été associée.',
      provider_unlinked: 'Une connexion avec un autre compte (comme Google) a été supprimée.',
    },
    short: {
      password_changed: 'mot de passe modifié',
      password_recovered: 'mot de passe réinitialisé',
      password_removed: 'mot de passe supprimé',
      authenticator_added: "application d'authentification ajoutée",
      authenticator_removed: "application d'authentification retirée",
      passkey_added: "clé d'accès ajoutée",
      passkey_removed: "clé d'accès supprimée",
      recovery_codes_issued: 'nouveaux codes de récupération',
      email_added: 'e-mail ajouté',
      phone_added: 'numéro de téléphone ajouté',
      identifier_removed: 'e-mail ou téléphone supprimé',
      provider_linked: 'compte de connexion associé',
      provider_unlinked: 'compte de connexion supprimé',
    },
    otherChange: 'Un paramètre de sécurité de votre compte a été modifié.',
    otherShort: 'paramètre de sécurité modifié',
    changedOne: 'Un paramètre de sécurité de votre compte a été modifié :',
    changedMany: (n) => `${n} paramètres de sécurité de votre compte ont été modifiés :`,
    when: 'Quand :',
    device: 'Appareil :',
    fromAddress: 'Depuis l’adresse :',
    from: 'Depuis :',
    unknownAddress: 'adresse inconnue',
    wasYou: "Si c'était vous, vous n'avez rien à faire.",
    changeNotYou:
      "Si ce n'était pas vous, connectez-vous et sécurisez votre compte (changez votre mot de passe et déconnectez-vous partout), ou contactez l'assistance.",
    changeSubjectOne: 'Une modification de sécurité sur votre compte',
    changeSubjectMany: 'Des modifications de sécurité sur votre compte',
    signInOne:
      "Quelqu'un s'est connecté à votre compte depuis un appareil ou un réseau inconnu ces 90 derniers jours.",
    signInMany: (n) =>
      `${n} connexions à votre compte venaient d'appareils ou de réseaux inconnus ces 90 derniers jours.`,
    signInNotYou:
      "Si ce n'était pas vous, connectez-vous, mettez fin à cette session dans Appareils (ou déconnectez-vous partout), et changez votre mot de passe.",
    signInSubjectOne: 'Nouvelle connexion à votre compte',
    signInSubjectMany: 'Nouvelles connexions à votre compte',
    sms: (what) =>
      `Changement de sécurité sur votre compte : ${what}. Pas vous ? Connectez-vous et sécurisez votre compte.`,
  },
  // The words describeDevice writes (its browser and system names are names, the same in French).
  existingAccount: {
    subject: 'Vous avez déjà un compte',
    text:
      'Quelqu’un a demandé à créer un compte avec cette adresse, mais elle en a déjà un. ' +
      'Connectez-vous avec votre mot de passe, ou récupérez-le si vous l’avez oublié. ' +
      'Si vous n’êtes pas à l’origine de cette demande, ignorez ce message.',
  },
  deletion: {
    subject: 'Votre compte a été supprimé',
    lead: 'Votre compte a été supprimé à votre demande.',
    gone: 'Ses adresses, son mot de passe, ses clés d’accès, ses authentificateurs, ses codes de récupération, ses comptes liés et ses sessions ont disparu, et ses adhésions aux organisations ont pris fin.',
    again: 'Une nouvelle inscription avec cette adresse crée un compte neuf et vide.',
    notYou: 'Si ce n’était pas vous, contactez le support immédiatement.',
    sms: 'Votre compte a été supprimé à votre demande. Pas vous ? Contactez le support immédiatement.',
  },
  device: (description) =>
    description
      .replace('Unknown device', 'Appareil inconnu')
      .replace('Unknown browser', 'Navigateur inconnu')
      .replace(' on ', ' sur ')
      .replace('(tablet)', '(tablette)')
      .replace('(mobile)', '(mobile)'),
};

const WORDING: Record<Locale, Wording> = { en, fr };

export interface Message {
  subject: string;
  text: string;
}

function wording(locale: Locale): Wording {
  return WORDING[locale] ?? en;
}

/** The product's name in the message's language ("Your account" / "Votre compte" when unnamed). */
export function productName(brand: MessageBrand, locale: Locale): string {
  return brand.named ? brand.name : wording(locale).product;
}

/** The closing lines of every message: the product's name, and its support link when configured. */
function signed(lines: string[], brand: MessageBrand, locale: Locale): string {
  const w = wording(locale);
  const closing = ['', w.signature(productName(brand, locale))];
  if (brand.supportUrl) closing.push(w.help(brand.supportUrl));
  return [...lines, ...closing].join('\n');
}

/**
 * A code message: the code as its own whitespace-separated token, its lifetime, the brand; for a
 * sign-in code with SIGN_IN_LINKS on, the link on a line of its own after the code.
 */
export function codeMessage(
  locale: Locale,
  brand: MessageBrand,
  purpose: CodePurpose,
  code: string,
  expiresInMinutes: number,
  link?: string,
): Message {
  const w = wording(locale);
  const words = w.codes[purpose];
  if (!words) throw new TypeError('unknown verification purpose');
  if (code.length === 0 || /\s/.test(code)) throw new TypeError('a verification code is one non-empty token');
  if (!Number.isFinite(expiresInMinutes)) throw new TypeError('expiresInMinutes must be a finite number');
  if (link !== undefined && (purpose !== 'sign_in' || /\s/.test(link))) {
    throw new TypeError('only a sign-in code carries a link, as one token');
  }
  const minutes = Math.max(1, Math.ceil(expiresInMinutes));
  const linked = link === undefined ? [] : [w.signInLink, link, ''];
  return {
    subject: words.subject,
    text: signed([words.lead, '', code, '', ...linked, `${w.expiresIn(minutes)} ${w.ignore}`], brand, locale),
  };
}

/** An organization invitation: the organization, the role, the link that carries the token. */
export function invitationMessage(
  locale: Locale,
  brand: MessageBrand,
  invitation: { organization: string; role: string; link: string; token: string; expiresInDays: number },
): Message {
  const { organization, role, link, token } = invitation;
  if (!link.endsWith(`/${token}`) || /\s/.test(link)) throw new TypeError('the link carries the token');
  const w = wording(locale).invitation;
  const days = Math.max(1, Math.ceil(invitation.expiresInDays));
  return {
    subject: w.subject(organization),
    text: signed([w.lead(organization, role), '', w.open, link, '', w.expires(days)], brand, locale),
  };
}

function utc(when: Date): string {
  return `${when.toISOString().replace('T', ' ').slice(0, 16)} UTC`;
}

/** One line per change, in plain words; never an address, a code or a link. */
export function changeWording(locale: Locale, kind: string): string {
  const n = wording(locale).notices;
  return n.what[kind as NoticeKind] ?? n.otherChange;
}

export function changeShortWording(locale: Locale, kind: string): string {
  const n = wording(locale).notices;
  return n.short[kind as NoticeKind] ?? n.otherShort;
}

/** The changes message: what changed, when, from which device and address; what to do if it was not you. */
export function changesEmail(locale: Locale, brand: MessageBrand, batch: readonly NoticeLine[]): Message {
  const w = wording(locale);
  const n = w.notices;
  const one = batch.length === 1;
  const lines = [one ? n.changedOne : n.changedMany(batch.length), ''];
  for (const line of batch) {
    lines.push(`- ${changeWording(locale, line.kind)}`);
    lines.push(`  ${n.when} ${utc(line.occurredAt)}`);
    if (line.device) lines.push(`  ${n.device} ${w.device(line.device)}`);
    if (line.ipAddress) lines.push(`  ${n.fromAddress} ${line.ipAddress}`);
  }
  lines.push('', n.wasYou, n.changeNotYou);
  return {
    subject: one ? n.changeSubjectOne : n.changeSubjectMany,
    text: signed(lines, brand, locale),
  };
}

/**
 * A notice as one short text message: the product's name first when it has one (an SMS has no
 * sender's name; unnamed, the message already says "your account"), the support link last.
 */
function signedSms(brand: MessageBrand, text: string): string {
  const name = brand.named ? `${brand.name}: ` : '';
  const help = brand.supportUrl ? ` ${brand.supportUrl}` : '';
  return `${name}${text}${help}`;
}

/** The changes as one short text message. */
export function changesSms(locale: Locale, brand: MessageBrand, batch: readonly NoticeLine[]): string {
  const what = [...new Set(batch.map((line) => changeShortWording(locale, line.kind)))].join(', ');
  return signedSms(brand, wording(locale).notices.sms(what));
}

/**
 * The message about new sign-ins: when, which device, from which address, and how to end a
 * session that was not the owner's. No link in it signs anyone in.
 */
export function signInEmail(locale: Locale, brand: MessageBrand, batch: readonly NoticeLine[]): Message {
  const w = wording(locale);
  const n = w.notices;
  const one = batch.length === 1;
  const lines = [one ? n.signInOne : n.signInMany(batch.length)];
  for (const line of batch) {
    if (!one) lines.push('');
    lines.push(
      `${n.when} ${utc(line.occurredAt)}`,
      `${n.device} ${w.device(line.device ?? 'Unknown device')}`,
    );
    lines.push(`${n.from} ${line.ipAddress ?? n.unknownAddress}`);
  }
  if (!one) lines.push('');
  lines.push(n.wasYou, n.signInNotYou);
  return {
    subject: one ? n.signInSubjectOne : n.signInSubjectMany,
    text: signed(lines, brand, locale),
  };
}

/** The message after the owner deleted the account: what went, when, from where; no link. */
export function deletionEmail(
  locale: Locale,
  brand: MessageBrand,
  from: { at: Date; device: string | null; ipAddress: string | null },
): Message {
  const w = wording(locale);
  const d = w.deletion;
  const n = w.notices;
  const lines = [d.lead, '', `${n.when} ${utc(from.at)}`];
  if (from.device) lines.push(`${n.device} ${w.device(from.device)}`);
  if (from.ipAddress) lines.push(`${n.fromAddress} ${from.ipAddress}`);
  lines.push('', d.gone, d.again, d.notYou);
  return { subject: d.subject, text: signed(lines, brand, locale) };
}

/** The deletion as one short text message. */
export function deletionSms(locale: Locale, brand: MessageBrand): string {
  return signedSms(brand, wording(locale).deletion.sms);
}

/** A sign-up by code for an address whose owner may not sign in by code: no code, only the facts. */
export function existingAccountMessage(locale: Locale, brand: MessageBrand): Message {
  const w = wording(locale).existingAccount;
  return { subject: w.subject, text: signed([w.text], brand, locale) };
}
