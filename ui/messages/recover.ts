import { messages } from '../i18n.js';

/** A forgotten password: a code to the address, then the new password. */
export const t = messages(
  {
    title: 'Forgot your password',
    back: 'Back to sign in',
    'find.heading': 'Find your account',
    'find.text': 'We will send a code to set a new password.',
    send: 'Send a code',
    'code.heading': 'Enter the code',
    sent: 'If {identifier} belongs to an account, a code is on its way.',
    code: 'Code',
    newPassword: 'New password',
    set: 'Set the new password',
    'done.heading': 'Password changed',
    'done.text': 'Your new password is set and every session was signed out.',
    'done.signIn': 'Sign in with the new password',
  },
  {
    title: 'Mot de passe oublié',
    back: 'Retour à la connexion',
    'find.heading': 'Retrouver votre compte',
    'find.text': 'Nous vous enverrons un code pour choisir un nouveau mot de passe.',
    send: 'Envoyer un code',
    'code.heading': 'Saisissez le code',
    sent: 'Si {identifier} correspond à un compte, un code est en route.',
    code: 'Code',
    newPassword: 'Nouveau mot de passe',
    set: 'Enregistrer le nouveau mot de passe',
    'done.heading': 'Mot de passe modifié',
    'done.text': 'Votre nouveau mot de passe est enregistré et toutes les sessions ont été déconnectées.',
    'done.signIn': 'Se connecter avec le nouveau mot de passe',
  },
);
