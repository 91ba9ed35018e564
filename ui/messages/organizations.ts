import { locale, messages } from '../i18n.js';

/** Organizations: the switcher in the frame, the organizations and members pages, invitations. */
export const t = messages(
  {
    // The switcher (desktop nav and the phone menu).
    'switcher.label': 'Acting in: {name}',
    'switcher.personal': 'Personal',
    'switcher.choose': 'Choose where you act',
    'switcher.all': 'All organizations',
    'switcher.option': '{name} ({role})',
    'switcher.switched': 'You now act in {name}.',
    'switcher.switchedPersonal': 'You now act on your own (Personal).',
    'switcher.secondFactor':
      '{name} requires 2-step verification of its members. Set up an authenticator app or a passkey, then choose {name} again.',
    // Roles.
    'role.owner': 'Owner',
    'role.admin': 'Admin',
    'role.member': 'Member',
    // The organizations page.
    'list.title': 'Organizations',
    'list.intro': 'The organizations you belong to and your role in each. You act in one at a time.',
    'list.none': 'You don’t belong to any organization yet.',
    'list.meta': '{slug} · {role}',
    'list.active': 'Active',
    'create.title': 'Create an organization',
    'create.name': 'Name',
    'create.slug': 'Short name (slug)',
    'create.slugHint': '2 to 48 lowercase letters, digits and hyphens. It must be unique.',
    'create.submit': 'Create',
    'create.disabled': 'Only the service’s operators can create organizations.',
    'create.taken': 'This short name is taken. Choose another.',
    'create.created': 'Organization {name} created. You are its owner.',
    // One organization.
    back: 'Back to organizations',
    'org.title': '{name}',
    'org.yourRole': 'Your role: {role}',
    'org.activate': 'Act in this organization',
    'org.isActive': 'You act in this organization.',
    'org.notFound': 'This organization doesn’t exist or you are not a member.',
    'members.title': 'Members',
    'members.you': '{display} (you)',
    'members.unnamed': 'A member without a verified address',
    'members.meta': '{role} · joined {when}',
    'members.role': 'Role of {name}',
    'members.change': 'Change role',
    'members.changeLabel': 'Change role of {name}',
    'members.changed': 'The role of {name} is now {role}.',
    'members.remove': 'Remove',
    'members.removeLabel': 'Remove {name}',
    'members.removeQuestion': 'Remove {name} from {org}?',
    'members.removeDetail': 'They lose access to the organization at once. You can invite them again.',
    'members.removed': '{name} was removed.',
    'members.leave': 'Leave',
    'members.leaveQuestion': 'Leave {org}?',
    'members.leaveDetail': 'You lose access at once. A member must invite you to come back.',
    'members.left': 'You left {org}.',
    'members.lastOwner': 'An organization must keep an owner: make another member owner first.',
    'invitations.title': 'Pending invitations',
    'invitations.none': 'No invitation is waiting.',
    'invitations.meta': '{role} · expires {when}',
    'invitations.revoke': 'Revoke',
    'invitations.revokeLabel': 'Revoke the invitation for {name}',
    'invitations.revokeQuestion': 'Revoke the invitation for {name}?',
    'invitations.revokeDetail': 'The link they received stops working.',
    'invitations.revoked': 'The invitation for {name} was revoked.',
    'invite.title': 'Invite',
    'invite.intro': 'They receive a link by email or text message, valid for 7 days.',
    'invite.role': 'Role',
    'invite.submit': 'Send the invitation',
    'invite.sent': 'Invitation sent to {name}.',
    'settings.title': 'Settings',
    'settings.name': 'Name',
    'settings.rename': 'Rename',
    'settings.renamed': 'The organization is now called {name}.',
    'settings.secondFactor': 'Require 2-step verification of members',
    'settings.secondFactorHint':
      'Members without an authenticator app or a passkey can’t act in this organization until they set one up.',
    'settings.save': 'Save',
    'settings.saved': 'Saved.',
    // The invitation page.
    'invitation.title': 'Invitation',
    'invitation.what': 'You are invited to join {org} as {role}.',
    'invitation.whatFrom': '{inviter} invited you to join {org} as {role}.',
    'invitation.sentTo': 'Sent to {identifier}. Valid until {when}.',
    'invitation.accept': 'Accept',
    'invitation.accepted': 'You joined {org} as {role}.',
    'invitation.open': 'Open {org}',
    'invitation.signedOut':
      'Sign in with the account of {identifier} to accept, or create an account with that address.',
    'invitation.signIn': 'Sign in',
    'invitation.signUp': 'Create an account',
    'invitation.missing': 'There is no invitation to show. Open the link from your invitation again.',
    'invitation.notFound': 'This invitation link is not valid. Check that you opened the whole link.',
    'invitation.expired': 'This invitation has expired. Ask for a new one.',
    'invitation.revoked': 'This invitation was withdrawn. Ask for a new one if you still need it.',
    'invitation.alreadyAccepted': 'This invitation was already accepted. Each invitation is used once.',
    'invitation.wrongIdentity':
      'This invitation is for {identifier}. Sign in with that account, or add and confirm that address in Security.',
    'invitation.alreadyMember': 'You are already a member of {org}.',
    'invitation.home': 'Go to your account',
    // The home page.
    'home.title': 'Your organizations',
    'home.none': 'You don’t belong to any organization.',
    'home.manage': 'Manage your organizations',
    'home.role': 'Your role: {role}',
  },
  {
    'switcher.label': 'Vous agissez dans : {name}',
    'switcher.personal': 'Personnel',
    'switcher.choose': 'Choisir où vous agissez',
    'switcher.all': 'Toutes les organisations',
    'switcher.option': '{name} ({role})',
    'switcher.switched': 'Vous agissez maintenant dans {name}.',
    'switcher.switchedPersonal': 'Vous agissez maintenant en votre nom (Personnel).',
    'switcher.secondFactor':
      '{name} exige la validation en deux étapes de ses membres. Configurez une application d’authentification ou une clé d’accès, puis choisissez de nouveau {name}.',
    'role.owner': 'Propriétaire',
    'role.admin': 'Administrateur',
    'role.member': 'Membre',
    'list.title': 'Organisations',
    'list.intro':
      'Les organisations dont vous êtes membre et votre rôle dans chacune. Vous agissez dans une seule à la fois.',
    'list.none': 'Vous n’êtes membre d’aucune organisation pour l’instant.',
    'list.meta': '{slug} · {role}',
    'list.active': 'Active',
    'create.title': 'Créer une organisation',
    'create.name': 'Nom',
    'create.slug': 'Nom court (identifiant)',
    'create.slugHint': 'De 2 à 48 lettres minuscules, chiffres et tirets. Il doit être unique.',
    'create.submit': 'Créer',
    'create.disabled': 'Seuls les opérateurs du service peuvent créer des organisations.',
    'create.taken': 'Ce nom court est déjà pris. Choisissez-en un autre.',
    'create.created': 'Organisation {name} créée. Vous en êtes propriétaire.',
    back: 'Retour aux organisations',
    'org.title': '{name}',
    'org.yourRole': 'Votre rôle : {role}',
    'org.activate': 'Agir dans cette organisation',
    'org.isActive': 'Vous agissez dans cette organisation.',
    'org.notFound': 'Cette organisation n’existe pas ou vous n’en êtes pas membre.',
    'members.title': 'Membres',
    'members.you': '{display} (vous)',
    'members.unnamed': 'Un membre sans adresse confirmée',
    'members.meta': '{role} · membre depuis le {when}',
    'members.role': 'Rôle de {name}',
    'members.change': 'Changer le rôle',
    'members.changeLabel': 'Changer le rôle de {name}',
    'members.changed': 'Le rôle de {name} est maintenant {role}.',
    'members.remove': 'Retirer',
    'members.removeLabel': 'Retirer {name}',
    'members.removeQuestion': 'Retirer {name} de {org} ?',
    'members.removeDetail':
      'Cette personne perd aussitôt l’accès à l’organisation. Vous pourrez l’inviter de nouveau.',
    'members.removed': '{name} a été retiré.',
    'members.leave': 'Quitter',
    'members.leaveQuestion': 'Quitter {org} ?',
    'members.leaveDetail': 'Vous perdez aussitôt l’accès. Un membre devra vous inviter pour revenir.',
    'members.left': 'Vous avez quitté {org}.',
    'members.lastOwner':
      'Une organisation doit garder un propriétaire : nommez d’abord un autre membre propriétaire.',
    'invitations.title': 'Invitations en attente',
    'invitations.none': 'Aucune invitation en attente.',
    'invitations.meta': '{role} · expire le {when}',
    'invitations.revoke': 'Annuler',
    'invitations.revokeLabel': 'Annuler l’invitation de {name}',
    'invitations.revokeQuestion': 'Annuler l’invitation de {name} ?',
    'invitations.revokeDetail': 'Le lien reçu ne fonctionnera plus.',
    'invitations.revoked': 'L’invitation de {name} a été annulée.',
    'invite.title': 'Inviter',
    'invite.intro': 'La personne reçoit un lien par e-mail ou par SMS, valable 7 jours.',
    'invite.role': 'Rôle',
    'invite.submit': 'Envoyer l’invitation',
    'invite.sent': 'Invitation envoyée à {name}.',
    'settings.title': 'Paramètres',
    'settings.name': 'Nom',
    'settings.rename': 'Renommer',
    'settings.renamed': 'L’organisation s’appelle maintenant {name}.',
    'settings.secondFactor': 'Exiger la validation en deux étapes des membres',
    'settings.secondFactorHint':
      'Les membres sans application d’authentification ni clé d’accès ne peuvent pas agir dans cette organisation tant qu’ils n’en ont pas configuré une.',
    'settings.save': 'Enregistrer',
    'settings.saved': 'Enregistré.',
    'invitation.title': 'Invitation',
    'invitation.what': 'Vous êtes invité à rejoindre {org} en tant que {role}.',
    'invitation.whatFrom': '{inviter} vous invite à rejoindre {org} en tant que {role}.',
    'invitation.sentTo': 'Envoyée à {identifier}. Valable jusqu’au {when}.',
    'invitation.accept': 'Accepter',
    'invitation.accepted': 'Vous avez rejoint {org} en tant que {role}.',
    'invitation.open': 'Ouvrir {org}',
    'invitation.signedOut':
      'Connectez-vous avec le compte de {identifier} pour accepter, ou créez un compte avec cette adresse.',
    'invitation.signIn': 'Se connecter',
    'invitation.signUp': 'Créer un compte',
    'invitation.missing': 'Aucune invitation à afficher. Ouvrez de nouveau le lien de votre invitation.',
    'invitation.notFound':
      'Ce lien d’invitation n’est pas valide. Vérifiez que vous avez ouvert le lien en entier.',
    'invitation.expired': 'Cette invitation a expiré. Demandez-en une nouvelle.',
    'invitation.revoked': 'Cette invitation a été retirée. Demandez-en une nouvelle si besoin.',
    'invitation.alreadyAccepted':
      'Cette invitation a déjà été acceptée. Chaque invitation ne sert qu’une fois.',
    'invitation.wrongIdentity':
      'Cette invitation est destinée à {identifier}. Connectez-vous avec ce compte, ou ajoutez et confirmez cette adresse dans Sécurité.',
    'invitation.alreadyMember': 'Vous êtes déjà membre de {org}.',
    'invitation.home': 'Aller à votre compte',
    'home.title': 'Vos organisations',
    'home.none': 'Vous n’êtes membre d’aucune organisation.',
    'home.manage': 'Gérer vos organisations',
    'home.role': 'Votre rôle : {role}',
  },
);

/** The configured roles' display names by language, as the last organization read answered them. */
const configured = new Map<string, Record<string, string>>();

/** Keeps the display names of an organization's roles (GET /organizations/{id}'s `roles`). */
export function rememberRoles(roles: readonly { name: string; displayName: Record<string, string> }[]): void {
  for (const r of roles) configured.set(r.name, r.displayName);
}

/**
 * A role's name in the person's language: a built-in role's from this catalogue; a configured
 * role's display name (ORGANIZATION_ROLES) in that language, else in English, else in any language
 * it has, else its own name.
 */
export function roleName(role: string): string {
  if (role === 'owner' || role === 'admin' || role === 'member') return t(`role.${role}`);
  const names = configured.get(role) ?? {};
  return names[locale()] ?? names.en ?? Object.values(names)[0] ?? role;
}
