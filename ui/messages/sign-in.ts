import { messages } from '../i18n.js';

/** The sign-in page and its second step (ui/pages/sign-in.ts). */
export const t = messages(
  {
    title: 'Sign in',
    cardLabel: 'Sign in',
    password: 'Password',
    submit: 'Sign in',
    forgot: 'Forgot password?',
    or: 'or',
    newHere: 'New here?',
    createAccount: 'Create an account',
    // The way on from a refused sign-in (an account never confirmed).
    neverConfirmed: 'Registered but never entered the code?',
    confirmPhone: 'Confirm your phone number',
    confirmAddress: 'Confirm your address',
    phoneConfirmed: 'This phone number is already confirmed. Check your password, or reset it.',
    addressConfirmed: 'This address is already confirmed. Check your password, or reset it.',
    impossiblePassword: 'That password is not one an account could have. Check it, or reset it.',
    resetPassword: 'Reset your password',
    // Passkeys.
    passkey: 'Sign in with a passkey',
    passkeyBrowser: 'This browser cannot use passkeys here.',
    passkeyHost: 'Passkeys work only when this page is opened on {rp} (it is on {host}).',
    // Sign-in by code (SIGN_IN_CODES): the button beside the password, then the code step.
    emailCode: 'Email me a code',
    textCode: 'Text me a code',
    'code.heading.email': 'Check your email',
    'code.heading.phone': 'Check your phone',
    'code.sent': 'We sent a code to {identifier}.',
    'code.label': 'Code',
    'code.link': 'Or open the link in the message, in this browser.',
    'code.submit': 'Sign in',
    'code.anotherWay': 'Use another way',
    // The link signed in another browser (SIGN_IN_LINKS): this one must use a new code.
    'code.elsewhere':
      'You finished signing in in another browser, with the link. This browser is not signed in: send a new code to sign in here.',
    // The link's page (#/sign-in/link/<id>/<token>): nothing signs in until the button.
    'link.intro': 'You opened a sign-in link. Nothing happens until you press the button.',
    'link.continueAs': 'Continue as {identifier}',
    'link.otherBrowser':
      'This is not the browser that asked for this link. Continue only if you asked for it yourself, just now.',
    'link.refused': 'This link has expired or was already used.',
    'link.signIn': 'Go to sign in',
    // The second step.
    'second.title': '2-step verification',
    'second.expired': 'Your sign-in has expired.',
    'second.signInAgain': 'Sign in again',
    'second.intro': 'Your password is right. Now confirm it is you with your authenticator app.',
    'second.introVia': 'You signed in with {via}. Now confirm it is you with your authenticator app.',
    'second.introCode': 'Your code is right. Now confirm it is you with your authenticator app.',
    'second.introLink': 'Your link is right. Now confirm it is you with your authenticator app.',
    'second.code': 'Authenticator code',
    'second.recoveryCode': 'Recovery code',
    'second.recoveryHint':
      'One of the recovery codes you saved when you turned on 2-step verification, like ABCD-EFGH-JKLM-NPQR. Each code works once.',
    // The intro once the person chose a recovery code instead of the authenticator.
    'second.introRecovery':
      'No authenticator app at hand? Enter one of your recovery codes instead. Each code works once.',
    'second.useRecovery': 'Use a recovery code instead',
    'second.useAuthenticator': 'Use an authenticator code instead',
    'second.usePasskey': 'Use a passkey instead',
    'second.submit': 'Continue',
    'second.startAgain': 'Start again',
    'second.cardLabel': '2-step verification',
    'second.recoveryRefused':
      'That recovery code was not accepted. Each code works only once: if you used it before, try another.',
    'second.signedIn': 'Signed in.',
    'second.codesLeft': {
      one: 'You have {count} recovery code left. Make new ones in Security.',
      other: 'You have {count} recovery codes left. Make new ones in Security.',
    },
    'second.noCodesLeft': 'You have no recovery codes left. Make new ones in Security.',
    'second.continue': 'Continue',
  },
  {
    title: 'Connexion',
    cardLabel: 'Connexion',
    password: 'Mot de passe',
    submit: 'Se connecter',
    forgot: 'Mot de passe oublié ?',
    or: 'ou',
    newHere: 'Nouveau ici ?',
    createAccount: 'Créer un compte',
    neverConfirmed: 'Inscrit sans avoir saisi le code ?',
    confirmPhone: 'Confirmer votre numéro de téléphone',
    confirmAddress: 'Confirmer votre adresse',
    phoneConfirmed:
      'Ce numéro de téléphone est déjà confirmé. Vérifiez votre mot de passe ou réinitialisez-le.',
    addressConfirmed: 'Cette adresse est déjà confirmée. Vérifiez votre mot de passe ou réinitialisez-le.',
    impossiblePassword: 'Aucun compte ne peut avoir ce mot de passe. Vérifiez-le ou réinitialisez-le.',
    resetPassword: 'Réinitialiser votre mot de passe',
    passkey: 'Se connecter avec une clé d’accès',
    passkeyBrowser: 'Ce navigateur ne peut pas utiliser de clé d’accès ici.',
    passkeyHost:
      'Les clés d’accès ne fonctionnent que si cette page est ouverte sur {rp} (elle est sur {host}).',
    emailCode: 'M’envoyer un code par e-mail',
    textCode: 'M’envoyer un code par SMS',
    'code.heading.email': 'Consultez vos e-mails',
    'code.heading.phone': 'Consultez votre téléphone',
    'code.sent': 'Nous avons envoyé un code à {identifier}.',
    'code.label': 'Code',
    'code.link': 'Ou ouvrez le lien du message, dans ce navigateur.',
    'code.submit': 'Se connecter',
    'code.anotherWay': 'Se connecter autrement',
    'code.elsewhere':
      'Vous avez terminé la connexion dans un autre navigateur, avec le lien. Ce navigateur n’est pas connecté : envoyez un nouveau code pour vous connecter ici.',
    'link.intro':
      'Vous avez ouvert un lien de connexion. Rien ne se passe tant que vous n’appuyez pas sur le bouton.',
    'link.continueAs': 'Continuer en tant que {identifier}',
    'link.otherBrowser':
      'Ce n’est pas le navigateur qui a demandé ce lien. Ne continuez que si vous l’avez demandé vous-même, à l’instant.',
    'link.refused': 'Ce lien a expiré ou a déjà été utilisé.',
    'link.signIn': 'Aller à la connexion',
    'second.title': 'Validation en deux étapes',
    'second.expired': 'Votre connexion a expiré.',
    'second.signInAgain': 'Se reconnecter',
    'second.intro':
      'Votre mot de passe est le bon. Confirmez maintenant que c’est bien vous avec votre application d’authentification.',
    'second.introVia':
      'Vous vous êtes connecté avec {via}. Confirmez maintenant que c’est bien vous avec votre application d’authentification.',
    'second.introCode':
      'Votre code est le bon. Confirmez maintenant que c’est bien vous avec votre application d’authentification.',
    'second.introLink':
      'Votre lien est le bon. Confirmez maintenant que c’est bien vous avec votre application d’authentification.',
    'second.code': 'Code d’authentification',
    'second.recoveryCode': 'Code de secours',
    'second.recoveryHint':
      'L’un des codes de secours que vous avez conservés en activant la validation en deux étapes, comme ABCD-EFGH-JKLM-NPQR. Chaque code ne fonctionne qu’une fois.',
    'second.introRecovery':
      'Votre application d’authentification n’est pas à portée de main ? Saisissez plutôt l’un de vos codes de secours. Chaque code ne fonctionne qu’une fois.',
    'second.useRecovery': 'Utiliser plutôt un code de secours',
    'second.useAuthenticator': 'Utiliser plutôt un code d’authentification',
    'second.usePasskey': 'Utiliser plutôt une clé d’accès',
    'second.submit': 'Continuer',
    'second.startAgain': 'Recommencer',
    'second.cardLabel': 'Validation en deux étapes',
    'second.recoveryRefused':
      'Ce code de secours n’a pas été accepté. Chaque code ne fonctionne qu’une fois : si vous l’avez déjà utilisé, essayez-en un autre.',
    'second.signedIn': 'Vous êtes connecté.',
    'second.codesLeft': {
      one: 'Il vous reste {count} code de secours. Créez-en de nouveaux dans Sécurité.',
      other: 'Il vous reste {count} codes de secours. Créez-en de nouveaux dans Sécurité.',
    },
    'second.noCodesLeft': 'Il ne vous reste aucun code de secours. Créez-en de nouveaux dans Sécurité.',
    'second.continue': 'Continuer',
  },
);
