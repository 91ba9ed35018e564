import { messages } from '../i18n.js';

/** Why passkeys cannot be used on this page, when they cannot. */
export const t = messages(
  {
    off: 'Passkeys are not enabled on this service.',
    browser: 'This browser cannot use passkeys here.',
    host: 'Passkeys work only when this page is opened on {rp} (it is on {host}). For local use, start the service with PUBLIC_ORIGIN=http://localhost:3000 and open http://localhost:3000/account/.',
  },
  {
    off: 'Les clés d’accès ne sont pas activées sur ce service.',
    browser: 'Ce navigateur ne peut pas utiliser de clés d’accès ici.',
    host: 'Les clés d’accès ne fonctionnent que si cette page est ouverte sur {rp} (elle est sur {host}). En local, démarrez le service avec PUBLIC_ORIGIN=http://localhost:3000 et ouvrez http://localhost:3000/account/.',
  },
);
