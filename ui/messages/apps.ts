import { messages } from '../i18n.js';

/** The Connected apps page. */
export const t = messages(
  {
    title: 'Connected apps',
    label: 'Apps with access to your account',
    intro:
      'Apps you signed in to with this account. Removing access signs you out of the app and it must ask again.',
    connected: 'Connected {when}',
    remove: 'Remove access',
    removeLabel: 'Remove access for {name}',
    none: 'No app has access to your account.',
  },
  {
    title: 'Applications connectées',
    label: 'Applications qui ont accès à votre compte',
    intro:
      'Les applications auxquelles vous vous êtes connecté avec ce compte. Retirer l’accès vous déconnecte de l’application, qui devra le redemander.',
    connected: 'Connectée le {when}',
    remove: 'Retirer l’accès',
    removeLabel: 'Retirer l’accès de {name}',
    none: 'Aucune application n’a accès à votre compte.',
  },
);
