import { messages } from '../i18n.js';

/** "Continue with …": sign-in, connection and step-up through an upstream provider. */
export const t = messages(
  {
    theProvider: 'the provider',
    orContinueWith: 'Or continue with',
    continueWith: 'Continue with {name}',
    finishing: 'Finishing your sign-in…',
    finishingWith: 'Finishing your sign-in with {name}…',
    notAvailable: '{Name} is not available here at the moment.',
    'cancelled.link': 'You cancelled connecting {name}.',
    'cancelled.sign_in': 'You cancelled signing in with {name}.',
    unavailable: '{Name} could not be reached. Try again in a moment.',
    account_exists:
      'An account already uses this email address. Sign in to it, then connect {name} from Security.',
    sign_up_closed:
      'New accounts cannot be created with {name} here. If you have an account, sign in to it, then connect {name} from Security.',
    already_linked: 'That {name} account is already connected to another account here.',
    hook_refused: 'This service does not allow a new account to be created with {name}.',
    'failed.link': '{Name} could not be connected. Please try again.',
    'failed.sign_in': 'That sign-in could not be completed. Please try again.',
  },
  {
    theProvider: 'le fournisseur',
    orContinueWith: 'Ou continuer avec',
    continueWith: 'Continuer avec {name}',
    finishing: 'Finalisation de votre connexion…',
    finishingWith: 'Finalisation de votre connexion avec {name}…',
    notAvailable: '{Name} n’est pas disponible ici pour le moment.',
    'cancelled.link': 'Vous avez annulé l’association de {name}.',
    'cancelled.sign_in': 'Vous avez annulé la connexion avec {name}.',
    unavailable: '{Name} est injoignable. Réessayez dans un instant.',
    account_exists:
      'Un compte utilise déjà cette adresse e-mail. Connectez-vous à ce compte, puis associez {name} depuis Sécurité.',
    sign_up_closed:
      'Impossible de créer un compte avec {name} ici. Si vous avez un compte, connectez-vous, puis associez {name} depuis Sécurité.',
    already_linked: 'Ce compte {name} est déjà associé à un autre compte ici.',
    hook_refused: 'Ce service ne permet pas de créer un compte avec {name}.',
    'failed.link': '{Name} n’a pas pu être associé. Veuillez réessayer.',
    'failed.sign_in': 'Cette connexion n’a pas pu aboutir. Veuillez réessayer.',
  },
);
