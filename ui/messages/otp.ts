import { messages } from '../i18n.js';

/** One-time codes: the code input (ui/otp.ts) and what goes with it (resend, another address). */
export const t = messages(
  {
    'hint.numeric': 'The {count}-digit code in the message we sent.',
    'hint.alphabetic': 'The {count}-letter code in the message we sent.',
    'hint.alphanumeric': 'The {count}-character code in the message we sent.',
    'hint.authenticator': 'The {count}-digit code your authenticator app shows now.',
    'incomplete.numeric': 'Enter all {count} digits of the code.',
    'incomplete.alphabetic': 'Enter all {count} letters of the code.',
    'incomplete.alphanumeric': 'Enter all {count} characters of the code.',
    'incomplete.authenticator': 'Enter the whole code your authenticator app shows.',
    sent: 'Code sent to {identifier}.',
    resend: 'Send a new code',
    'different.email': 'Use a different address',
    'different.phone': 'Use a different phone number',
    // The configured lifetime of a code (CHALLENGE_TTL), under the code field.
    'expiresIn.minutes': { one: 'It expires in {count} minute.', other: 'It expires in {count} minutes.' },
    'expiresIn.hours': { one: 'It expires in {count} hour.', other: 'It expires in {count} hours.' },
  },
  {
    'hint.numeric': 'Le code à {count} chiffres du message que nous vous avons envoyé.',
    'hint.alphabetic': 'Le code de {count} lettres du message que nous vous avons envoyé.',
    'hint.alphanumeric': 'Le code de {count} caractères du message que nous vous avons envoyé.',
    'hint.authenticator':
      'Le code à {count} chiffres affiché en ce moment par votre application d’authentification.',
    'incomplete.numeric': 'Saisissez les {count} chiffres du code.',
    'incomplete.alphabetic': 'Saisissez les {count} lettres du code.',
    'incomplete.alphanumeric': 'Saisissez les {count} caractères du code.',
    'incomplete.authenticator': 'Saisissez le code complet affiché par votre application d’authentification.',
    sent: 'Code envoyé à {identifier}.',
    resend: 'Envoyer un nouveau code',
    'different.email': 'Utiliser une autre adresse',
    'different.phone': 'Utiliser un autre numéro de téléphone',
    'expiresIn.minutes': {
      one: 'Il expire dans {count}\u00a0minute.',
      other: 'Il expire dans {count}\u00a0minutes.',
    },
    'expiresIn.hours': {
      one: 'Il expire dans {count}\u00a0heure.',
      other: 'Il expire dans {count}\u00a0heures.',
    },
  },
);
