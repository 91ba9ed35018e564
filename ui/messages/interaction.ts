import { messages } from '../i18n.js';

/** The OpenID Provider's pages (an application's sign-in and consent), and what each scope lets it do. */
export const t = messages(
  {
    'scope.openid': 'Confirm who you are',
    'scope.profile': 'Your name and basic profile',
    'scope.email': 'Your email address',
    'scope.phone': 'Your phone number',
    'scope.offline_access': 'Stay connected when you are not using it',
    'scope.organization': 'The organization you are working in, and your role there',
    'scope.other': 'Access named “{scope}”',
    'expired.title': 'This request has expired',
    'expired.text': 'This sign-in request is no longer valid. Go back to the application and start again.',
    'expired.home': 'Go to your account',
    'continuing.title': 'Continuing to {name}',
    'continuing.text': 'You are signed in. Taking you back to {name}…',
    'signIn.title': 'Sign in to continue to {name}',
    'signIn.again': '{name} asks you to sign in again, to be sure it is you.',
    'signIn.intro': '{name} uses your account here to sign you in.',
    'consent.title': 'Allow {name} to use your account?',
    'consent.asks': '{name} would like:',
    'consent.trust': 'Allow only if you trust {name}.',
    'consent.allow': 'Allow',
    'consent.cancel': 'Cancel',
    'consent.about': 'About {name}:',
    'consent.website': 'Website',
    'consent.policy': 'Privacy policy',
    'consent.terms': 'Terms of service',
    'consent.opens': '(opens in a new tab)',
    'consent.account': 'Signed in as {who}',
    'consent.notYou': 'Not you?',
    'consent.organization': '{name} will see the organization you are working in: {organization}.',
    'consent.noOrganization': '{name} asks for your organization, but you are not working in one now.',
  },
  {
    'scope.openid': 'Confirmer qui vous êtes',
    'scope.profile': 'Votre nom et votre profil de base',
    'scope.email': 'Votre adresse e-mail',
    'scope.phone': 'Votre numéro de téléphone',
    'scope.offline_access': 'Rester connectée quand vous ne l’utilisez pas',
    'scope.organization': 'L’organisation dans laquelle vous travaillez, et votre rôle',
    'scope.other': 'L’accès nommé « {scope} »',
    'expired.title': 'Cette demande a expiré',
    'expired.text': 'Cette demande de connexion n’est plus valable. Revenez à l’application et recommencez.',
    'expired.home': 'Aller à votre compte',
    'continuing.title': 'Retour vers {name}',
    'continuing.text': 'Vous êtes connecté. Nous vous ramenons à {name}…',
    'signIn.title': 'Connectez-vous pour continuer vers {name}',
    'signIn.again': '{name} vous demande de vous reconnecter, pour s’assurer que c’est bien vous.',
    'signIn.intro': '{name} utilise votre compte ici pour vous connecter.',
    'consent.title': 'Autoriser {name} à utiliser votre compte ?',
    'consent.asks': '{name} souhaite :',
    'consent.trust': 'N’autorisez que si vous faites confiance à {name}.',
    'consent.allow': 'Autoriser',
    'consent.cancel': 'Annuler',
    'consent.about': 'À propos de {name} :',
    'consent.website': 'Site web',
    'consent.policy': 'Politique de confidentialité',
    'consent.terms': 'Conditions d’utilisation',
    'consent.opens': '(s’ouvre dans un nouvel onglet)',
    'consent.account': 'Connecté en tant que {who}',
    'consent.notYou': 'Ce n’est pas vous ?',
    'consent.organization': '{name} verra l’organisation dans laquelle vous travaillez : {organization}.',
    'consent.noOrganization':
      '{name} demande votre organisation, mais vous ne travaillez dans aucune en ce moment.',
  },
);

const SCOPES = ['openid', 'profile', 'email', 'phone', 'offline_access', 'organization'] as const;

/** What a scope lets the application do, in the person's words (consent and Connected apps). */
export function scopeWords(scope: string): string {
  return (SCOPES as readonly string[]).includes(scope)
    ? t(`scope.${scope as (typeof SCOPES)[number]}`)
    : t('scope.other', { scope });
}
