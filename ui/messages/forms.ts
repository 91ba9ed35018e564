import { messages } from '../i18n.js';

/**
 * What every form shares: refusals in the person's words (ui/problems.ts), the form's own checks
 * before sending (ui/forms.ts), waits (ui/wait.ts), fields (ui/dom.ts, ui/new-password.ts) and the
 * identifier field (ui/identifier.ts).
 */
export const t = messages(
  {
    // Refusals by code (ui/problems.ts).
    'identity.sign_in_refused': 'That email or phone number and password do not match an account.',
    'identity.sso_required':
      'Addresses of this domain sign in through their organization’s identity provider. Use your organization’s sign-in.',
    'ui.sign_up_confirmation_refused':
      'That code and password were not accepted. Check the newest message we sent and the password you chose.',
    'identity.second_factor_refused': 'That code was not accepted. Check it and try again, or sign in again.',
    'identity.sign_in_second_factor_locked': 'Too many wrong codes: the account is locked for a while.',
    'identity.verification_refused': 'That code was not accepted. Check the newest message we sent.',
    'identity.identifier_taken': 'That address is already in use.',
    'identity.identifier_unusable': 'That address cannot be used. Check it for typos.',
    'identity.identifier_channel_unavailable': 'We cannot send messages to that address.',
    'identity.picture_unusable':
      'This file is not a picture we can use. Choose a PNG, JPEG, WebP or GIF image of a normal size.',
    'request.body_too_large': 'This file is too large.',
    'request.unsupported_media_type': 'This kind of file cannot be used here.',
    'identity.password_recovery_refused': 'That code was not accepted. Check the newest message we sent.',
    'identity.password_change_refused': 'Your current password is not right.',
    'identity.password_exists': 'This account already has a password. Change it instead.',
    'identity.step_up_confirmation_refused': 'That code was not accepted. Try again.',
    'identity.step_up_locked': 'Too many wrong codes: the account is locked for a while.',
    'identity.step_up_unavailable': 'There is no way to confirm it is you on this account.',
    'identity.second_factor_confirmation_refused':
      'That code was not accepted. Check the time on your phone.',
    'identity.second_factor_locked': 'Too many wrong codes: the account is locked for a while.',
    'identity.sign_in_method_confirmation_refused': 'That code was not accepted.',
    'identity.sign_in_method_locked': 'Too many wrong codes: the account is locked for a while.',
    'identity.last_sign_in_method': 'This is your last way in, so it cannot be removed.',
    'identity.account_deletion_refused':
      'That is not what was asked: type it exactly as shown. Your account was not deleted.',
    'identity.account_deletion_last_owner':
      'You are the last owner of an organization that has other members. Make another member an owner (or remove the members) first. Your account was not deleted.',
    'identity.session_required': 'Your session has ended. Please sign in again.',
    'identity.elevation_required': 'Please confirm it is you first.',
    'identity.cross_site_refused': 'This page could not reach your account. Reload it and try again.',
    'identity.renewal_refused': 'Your session has ended. Please sign in again.',
    'rate_limit.exceeded': 'Too many attempts. Wait a moment and try again.',
    'service.unavailable': 'The service is busy. Try again in a moment.',
    'hooks.refused': 'This service does not allow this. Contact its administrator if you think it should.',
    'hooks.unavailable': 'This cannot be checked right now. Try again in a moment.',
    'ui.passkey_cancelled': 'The passkey prompt was closed or timed out.',
    // NotAllowedError at once: the browser found no passkey to offer (ui/api.ts, NoPasskeyHere).
    'ui.passkey_none':
      'There is no passkey for this site on this device. Sign in another way (your password or a code), then add a passkey in Security.',
    // A code refused after the lifetime it was sent with (ui/otp.ts codeSent): the next step.
    'ui.code_expired': 'This code has expired. Send a new code, then enter it here.',
    // A sign-in code refused (ui/pages/sign-in.ts): wrong, expired or ended by a newer one, alike.
    'ui.sign_in_code_refused':
      'That code is not right, or it has expired. Check the newest message we sent, or send a new code.',
    tooManyWait: 'Too many attempts. Try again in {wait}.',
    correctFields: 'Please correct the highlighted fields.',
    somethingWrong: 'Something went wrong. Try again.',
    // A field's refusal (ui/problems.ts fieldMessage).
    weakPassword: 'This password is too easy to guess. Add more words or make it longer.',
    breachedPassword:
      'This password has appeared in data breaches, so attackers try it first. Choose another one.',
    codeExpired: 'This code has expired.',
    tooShort: 'This is too short.',
    tooLong: 'This is too long.',
    pattern: 'This does not have the expected format.',
    invalid: 'This is not valid.',
    // The form's own checks before sending (ui/forms.ts).
    required: 'Fill in this field.',
    'required.recoveryCode': 'Enter one of your recovery codes.',
    'required.identifier': 'Enter your email or phone number.',
    'required.password': 'Enter your password.',
    'required.code': 'Enter the code.',
    minLength: { one: 'Use at least {count} character.', other: 'Use at least {count} characters.' },
    maxLength: { one: 'Use at most {count} character.', other: 'Use at most {count} characters.' },
    // Waits (ui/wait.ts).
    seconds: { one: '{count} second', other: '{count} seconds' },
    aboutMinutes: { one: 'about {count} minute', other: 'about {count} minutes' },
    aboutHours: { one: 'about {count} hour', other: 'about {count} hours' },
    tryAgainIn: 'Try again in ',
    // Fields (ui/dom.ts, ui/new-password.ts).
    passwordBounds: '12 to 200 characters.',
    showPassword: 'Show password',
    hidePassword: 'Hide password',
    // The identifier field (ui/identifier.ts).
    identifier: 'Email or phone number',
    identifierHint: 'A phone number can start with + and its country code.',
    country: 'Country of the phone number',
    countryOption: '{name} (+{calling})',
  },
  {
    'identity.sign_in_refused':
      'Cette adresse e-mail ou ce numéro de téléphone et ce mot de passe ne correspondent à aucun compte.',
    'identity.sso_required':
      'Les adresses de ce domaine se connectent par le fournisseur d’identité de leur organisation. Utilisez la connexion de votre organisation.',
    'ui.sign_up_confirmation_refused':
      'Ce code et ce mot de passe n’ont pas été acceptés. Vérifiez le dernier message envoyé et le mot de passe choisi.',
    'identity.second_factor_refused':
      'Ce code n’a pas été accepté. Vérifiez-le et réessayez, ou reconnectez-vous.',
    'identity.sign_in_second_factor_locked': 'Trop de codes erronés : le compte est bloqué pour un moment.',
    'identity.verification_refused': 'Ce code n’a pas été accepté. Vérifiez le dernier message envoyé.',
    'identity.identifier_taken': 'Cette adresse est déjà utilisée.',
    'identity.identifier_unusable':
      'Cette adresse ne peut pas être utilisée. Vérifiez qu’elle ne contient pas de faute.',
    'identity.identifier_channel_unavailable': 'Nous ne pouvons pas envoyer de messages à cette adresse.',
    'identity.picture_unusable':
      'Ce fichier n’est pas une image utilisable. Choisissez une image PNG, JPEG, WebP ou GIF de taille normale.',
    'request.body_too_large': 'Ce fichier est trop volumineux.',
    'request.unsupported_media_type': 'Ce type de fichier ne peut pas être utilisé ici.',
    'identity.password_recovery_refused': 'Ce code n’a pas été accepté. Vérifiez le dernier message envoyé.',
    'identity.password_change_refused': 'Votre mot de passe actuel n’est pas le bon.',
    'identity.password_exists': 'Ce compte a déjà un mot de passe. Modifiez-le plutôt.',
    'identity.step_up_confirmation_refused': 'Ce code n’a pas été accepté. Réessayez.',
    'identity.step_up_locked': 'Trop de codes erronés : le compte est bloqué pour un moment.',
    'identity.step_up_unavailable': 'Ce compte n’a aucun moyen de confirmer que c’est bien vous.',
    'identity.second_factor_confirmation_refused':
      'Ce code n’a pas été accepté. Vérifiez l’heure de votre téléphone.',
    'identity.second_factor_locked': 'Trop de codes erronés : le compte est bloqué pour un moment.',
    'identity.sign_in_method_confirmation_refused': 'Ce code n’a pas été accepté.',
    'identity.sign_in_method_locked': 'Trop de codes erronés : le compte est bloqué pour un moment.',
    'identity.last_sign_in_method': 'C’est votre dernier moyen de connexion : il ne peut pas être supprimé.',
    'identity.account_deletion_refused':
      'Ce n’est pas ce qui était demandé : saisissez-le exactement comme indiqué. Votre compte n’a pas été supprimé.',
    'identity.account_deletion_last_owner':
      'Vous êtes le dernier propriétaire d’une organisation qui a d’autres membres. Nommez d’abord un autre membre propriétaire (ou retirez les membres). Votre compte n’a pas été supprimé.',
    'identity.session_required': 'Votre session a pris fin. Veuillez vous reconnecter.',
    'identity.elevation_required': 'Veuillez d’abord confirmer que c’est bien vous.',
    'identity.cross_site_refused': 'Cette page n’a pas pu joindre votre compte. Rechargez-la et réessayez.',
    'identity.renewal_refused': 'Votre session a pris fin. Veuillez vous reconnecter.',
    'rate_limit.exceeded': 'Trop de tentatives. Patientez un instant, puis réessayez.',
    'service.unavailable': 'Le service est occupé. Réessayez dans un instant.',
    'hooks.refused':
      'Ce service ne le permet pas. Contactez son administrateur si vous pensez que c’est une erreur.',
    'hooks.unavailable': 'Impossible de le vérifier pour le moment. Réessayez dans un instant.',
    'ui.passkey_cancelled': 'La fenêtre de la clé d’accès a été fermée ou a expiré.',
    'ui.passkey_none':
      'Cet appareil n’a pas de clé d’accès pour ce site. Connectez-vous autrement (mot de passe ou code), puis ajoutez une clé d’accès dans Sécurité.',
    'ui.code_expired': 'Ce code a expiré. Envoyez-en un nouveau, puis saisissez-le ici.',
    'ui.sign_in_code_refused':
      'Ce code n’est pas le bon, ou il a expiré. Vérifiez le dernier message que nous avons envoyé, ou demandez un nouveau code.',
    tooManyWait: 'Trop de tentatives. Réessayez dans {wait}.',
    correctFields: 'Veuillez corriger les champs signalés.',
    somethingWrong: 'Un problème est survenu. Réessayez.',
    weakPassword: 'Ce mot de passe est trop facile à deviner. Ajoutez des mots ou allongez-le.',
    breachedPassword:
      'Ce mot de passe figure dans des fuites de données : les attaquants l’essaient en premier. Choisissez-en un autre.',
    codeExpired: 'Ce code a expiré.',
    tooShort: 'C’est trop court.',
    tooLong: 'C’est trop long.',
    pattern: 'Le format n’est pas celui attendu.',
    invalid: 'Ce n’est pas valide.',
    required: 'Remplissez ce champ.',
    'required.recoveryCode': 'Saisissez l’un de vos codes de secours.',
    'required.identifier': 'Saisissez votre adresse e-mail ou votre numéro de téléphone.',
    'required.password': 'Saisissez votre mot de passe.',
    'required.code': 'Saisissez le code.',
    minLength: {
      one: 'Utilisez au moins {count} caractère.',
      other: 'Utilisez au moins {count} caractères.',
    },
    maxLength: { one: 'Utilisez au plus {count} caractère.', other: 'Utilisez au plus {count} caractères.' },
    seconds: { one: '{count} seconde', other: '{count} secondes' },
    aboutMinutes: { one: 'environ {count} minute', other: 'environ {count} minutes' },
    aboutHours: { one: 'environ {count} heure', other: 'environ {count} heures' },
    tryAgainIn: 'Réessayez dans ',
    passwordBounds: 'De 12 à 200 caractères.',
    showPassword: 'Afficher le mot de passe',
    hidePassword: 'Masquer le mot de passe',
    identifier: 'Adresse e-mail ou numéro de téléphone',
    identifierHint: 'Un numéro de téléphone peut commencer par + et l’indicatif du pays.',
    country: 'Pays du numéro de téléphone',
    countryOption: '{name} (+{calling})',
  },
);
