import { messages } from '../i18n.js';

/**
 * The page's frame: the product's name when none is configured (BRAND_NAME), the help link, the
 * skip link, the navigation and the pages for when nothing else can be shown.
 */
export const t = messages(
  {
    product: 'Your account',
    help: 'Get help',
    skip: 'Skip to content',
    'nav.label': 'Account',
    'nav.home': 'Account',
    'nav.security': 'Security',
    'nav.devices': 'Devices',
    'nav.apps': 'Connected apps',
    'nav.history': 'Sign-in history',
    'nav.signOut': 'Sign out',
    'nav.menu': 'Menu',
    'ended.elsewhere': 'You were signed out in another tab.',
    'ended.deleted': 'Your account was deleted. We sent a message to your address to confirm it.',
    'ended.service':
      'You were signed out: your session was ended from another device or by a password change, or it expired.',
    'failed.title': 'Something went wrong',
    'failed.retry': 'Try again',
    'unavailable.title': 'Unavailable',
    'unavailable.text': 'The account service could not be reached.',
  },
  {
    product: 'Votre compte',
    help: 'Obtenir de l’aide',
    skip: 'Aller au contenu',
    'nav.label': 'Compte',
    'nav.home': 'Compte',
    'nav.security': 'Sécurité',
    'nav.devices': 'Appareils',
    'nav.apps': 'Applications connectées',
    'nav.history': 'Historique des connexions',
    'nav.signOut': 'Se déconnecter',
    'nav.menu': 'Menu',
    'ended.elsewhere': 'Vous avez été déconnecté dans un autre onglet.',
    'ended.deleted':
      'Votre compte a été supprimé. Nous avons envoyé un message à votre adresse pour le confirmer.',
    'ended.service':
      'Vous avez été déconnecté : votre session a été fermée depuis un autre appareil ou par un changement de mot de passe, ou elle a expiré.',
    'failed.title': 'Une erreur est survenue',
    'failed.retry': 'Réessayer',
    'unavailable.title': 'Indisponible',
    'unavailable.text': 'Le service de compte est injoignable.',
  },
);
