import { messages } from '../i18n.js';

/** Enterprise sign-in (SAML): the page that asks to continue, the return of a flow, identifier first. */
export const t = messages(
  {
    theIdp: 'your organization’s identity provider',
    finishing: 'Finishing your sign-in with your organization…',
    refused: 'Your organization’s sign-in could not be completed. Please try again.',
    not_allowed:
      'Your organization signed you in, but with an email address outside its verified domains. Ask its administrator.',
    'continue.title': 'Continue signing in',
    'continue.intro':
      'Your organization’s identity provider sent you here to sign in. Continue only if you started this sign-in yourself.',
    'continue.organization': 'Organization',
    'continue.connection': 'Identity provider',
    'continue.submit': 'Continue',
    'continue.cancel': 'Cancel',
    'continue.refused': 'This sign-in has expired or was already used. Sign in again from your organization.',
    'continue.signIn': 'Go to sign-in',
    next: 'Continue',
    redirecting: 'Taking you to your organization’s sign-in…',
  },
  {
    theIdp: 'le fournisseur d’identité de votre organisation',
    finishing: 'Finalisation de votre connexion avec votre organisation…',
    refused: 'La connexion par votre organisation n’a pas pu aboutir. Veuillez réessayer.',
    not_allowed:
      'Votre organisation vous a connecté, mais avec une adresse e-mail hors de ses domaines vérifiés. Adressez-vous à son administrateur.',
    'continue.title': 'Poursuivre la connexion',
    'continue.intro':
      'Le fournisseur d’identité de votre organisation vous a envoyé ici pour vous connecter. Ne continuez que si vous avez lancé cette connexion vous-même.',
    'continue.organization': 'Organisation',
    'continue.connection': 'Fournisseur d’identité',
    'continue.submit': 'Continuer',
    'continue.cancel': 'Annuler',
    'continue.refused':
      'Cette connexion a expiré ou a déjà servi. Reconnectez-vous depuis votre organisation.',
    'continue.signIn': 'Aller à la connexion',
    next: 'Continuer',
    redirecting: 'Redirection vers la connexion de votre organisation…',
  },
);
