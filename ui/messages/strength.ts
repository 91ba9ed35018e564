import { messages } from '../i18n.js';

/**
 * The strength meter under a new password (ui/strength.ts) and the refusal of a weak one
 * (ui/problems.ts). zxcvbn's own advice is translated by ui/messages/strength-zxcvbn.ts.
 */
export const t = messages(
  {
    meter: 'Password strength',
    unrated: 'Not rated yet',
    tooWeak: 'Too weak',
    weak: 'Weak',
    good: 'Good',
    strong: 'Strong',
    atLeast: 'Use at least {count} characters.',
    atMost: 'Use at most {count} characters.',
    // zxcvbn's advice, already in the page's language: through the catalogue so that the
    // pseudo-locale marks it as translated text like the rest.
    advice: '{advice}',
    // A weak password refused by the service, with the advice the meter gave for it.
    refusedWeak: 'This password is too easy to guess. {advice}',
    // In the bundled list of passwords seen in data breaches (src/shared/password-policy.ts).
    breached: 'This password has appeared in data breaches, so attackers try it first. Choose another one.',
  },
  {
    meter: 'Robustesse du mot de passe',
    unrated: 'Pas encore évalué',
    tooWeak: 'Trop faible',
    weak: 'Faible',
    good: 'Bon',
    strong: 'Excellent',
    atLeast: 'Utilisez au moins {count} caractères.',
    atMost: 'Utilisez au plus {count} caractères.',
    advice: '{advice}',
    refusedWeak: 'Ce mot de passe est trop facile à deviner. {advice}',
    breached:
      'Ce mot de passe figure dans des fuites de données : les attaquants l’essaient en premier. Choisissez-en un autre.',
  },
);
