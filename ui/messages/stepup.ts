import { messages } from '../i18n.js';

/** The step-up box: confirming it is you before an elevated action. */
export const t = messages(
  {
    title: 'Confirm it is you',
    preparing: 'Preparing…',
    'prompt.identifier': 'We sent a code to your address. Enter it to continue.',
    // The masked address the code went to (a***@example.com), from the service.
    'prompt.identifierTo': 'We sent a code to {destination}. Enter it to continue.',
    'prompt.second_factor': 'Enter the code your authenticator app shows now.',
    'prompt.recovery_code': 'Enter one of your recovery codes. Each code works once.',
    unavailable: 'That way is not available on this account.',
    cannotStart: 'The step-up could not start.',
    code: 'Code',
    recoveryCode: 'Recovery code',
    confirm: 'Confirm',
    cancel: 'Cancel',
    useRecoveryCode: 'Use a recovery code',
    useAuthenticator: 'Use your authenticator app',
    usePasskey: 'Use a passkey',
    passkeyRefused: 'The passkey was not accepted.',
    useProvider: 'Use {name}',
  },
  {
    title: 'Confirmez que c’est bien vous',
    preparing: 'Préparation…',
    'prompt.identifier': 'Nous avons envoyé un code à votre adresse. Saisissez-le pour continuer.',
    'prompt.identifierTo': 'Nous avons envoyé un code à {destination}. Saisissez-le pour continuer.',
    'prompt.second_factor':
      'Saisissez le code affiché en ce moment par votre application d’authentification.',
    'prompt.recovery_code': 'Saisissez l’un de vos codes de secours. Chaque code ne fonctionne qu’une fois.',
    unavailable: 'Ce moyen n’est pas disponible pour ce compte.',
    cannotStart: 'La confirmation n’a pas pu démarrer.',
    code: 'Code',
    recoveryCode: 'Code de secours',
    confirm: 'Confirmer',
    cancel: 'Annuler',
    useRecoveryCode: 'Utiliser un code de secours',
    useAuthenticator: 'Utiliser votre application d’authentification',
    usePasskey: 'Utiliser une clé d’accès',
    passkeyRefused: 'La clé d’accès n’a pas été acceptée.',
    useProvider: 'Utiliser {name}',
  },
);
