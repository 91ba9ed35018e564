import { messages } from '../i18n.js';

/** Creating an account: the address and password, then the code that confirms the address. */
export const t = messages(
  {
    title: 'Create an account',
    haveAccount: 'Already have an account?',
    signIn: 'Sign in',
    'first.heading': 'Your address and a password',
    password: 'Password',
    'password.hint': 'A few unrelated words make a strong one.',
    create: 'Create account',
    'confirm.email': 'Confirm your address',
    'confirm.phone': 'Confirm your phone number',
    sentEarlier: 'We sent a code to {identifier}.',
    code: 'Code',
    chosen: 'The password you chose',
    'chosen.hint': 'It is never kept when the page reloads, so enter it once more.',
    'chosen.first': 'Enter the password you chose first.',
    confirm: 'Confirm',
  },
  {
    title: 'Créer un compte',
    haveAccount: 'Vous avez déjà un compte\u00a0?',
    signIn: 'Se connecter',
    'first.heading': 'Votre adresse et un mot de passe',
    password: 'Mot de passe',
    'password.hint': 'Quelques mots sans rapport entre eux font un mot de passe solide.',
    create: 'Créer le compte',
    'confirm.email': 'Confirmez votre adresse',
    'confirm.phone': 'Confirmez votre numéro de téléphone',
    sentEarlier: 'Nous avons envoyé un code à {identifier}.',
    code: 'Code',
    chosen: 'Le mot de passe que vous avez choisi',
    'chosen.hint': 'Il n’est jamais conservé quand la page se recharge\u00a0: saisissez-le encore une fois.',
    'chosen.first': 'Saisissez d’abord le mot de passe que vous avez choisi.',
    confirm: 'Confirmer',
  },
);
